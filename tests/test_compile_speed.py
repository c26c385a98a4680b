"""What keeps the compiler fast, checked without timing anything (timings live in
benchmarks/compile_speed.py and docs/compile_speed.md): bulkred-opt's start-up imports
nothing that ``--help`` and argument checking do not need, the drivers verify the input
and the result once (every pass only with ``--verify-each``), and the garbage collector
is paused while they compile."""

from __future__ import annotations

import gc
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from bulkred_dialect import cli, diagnostics
from bulkred_dialect.backend_ptx import printer
from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.pipeline import apply_passes, build_passes, available_passes, gc_paused

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "examples" / "seed_sum32.mlir"

# Imported only when a pass, the PTX printer, the GPU runtime or the interpreter is used.
HEAVY = (
    "numpy",
    "cuda",
    "nvidia",
    "bulkred_dialect.ops.ptx",
    "bulkred_dialect.backend_ptx",
    "bulkred_dialect.interpreter",
    "bulkred_dialect.passes.lower_tile_reductions",
    "bulkred_dialect.passes.variants",
)


# What the start-up checks below run, in this order, in one fresh interpreter (a process
# each cost 0.15-0.4 CPU-s, mostly the same imports): after each step the heavy modules
# imported so far are listed, so a step's list holds its own and the earlier steps'
# (the checks want them empty: an empty list after a step is an empty list for each
# step before it and for the step alone). The last step imports heavy modules on purpose:
# the probe sees them.
STEPS = {
    "import-universe": "import bulkred_dialect.universe",  # loaded by plain xdsl-opt as a plugin
    # importing the cli is the first step of this and of the next step's parse
    "help": "from bulkred_dialect.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
    # printing a tile-level file back (no -p)
    "parse": (
        "import contextlib, io\nfrom bulkred_dialect.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()):\n    assert main([{str(SEED)!r}]) == 0"
    ),
    "heavy": "import numpy\nimport bulkred_dialect.passes.check_target",
}


def _modules_after(steps: dict[str, str]) -> dict[str, list[str]]:
    """The heavy modules imported after each of ``steps`` (run in order in a fresh
    interpreter), by the step's name."""
    probe = "import sys\n" + "".join(
        f"{code}\nprint('-- modules after {name} --', *(m for m in sys.modules if m.startswith({HEAVY!r})))\n"
        for name, code in steps.items()
    )
    r = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    found = {}
    for line in r.stdout.splitlines():
        if line.startswith("-- modules after "):
            name, _, modules = line.removeprefix("-- modules after ").partition(" --")
            found[name] = modules.split()
    assert list(found) == list(steps), r.stdout
    return found


@pytest.fixture(scope="module")
def heavy_after() -> dict[str, list[str]]:
    """:data:`STEPS` run once: the heavy modules after each."""
    return _modules_after(STEPS)


def test_the_probe_sees_heavy_imports(heavy_after):
    seen = heavy_after["heavy"]
    assert "numpy" in seen and "bulkred_dialect.ops.ptx" in seen


@pytest.mark.parametrize("step", ["import-universe", "help"])
def test_start_up_imports_nothing_heavy(heavy_after, step):
    assert heavy_after[step] == []


def test_parsing_tile_ir_needs_no_ptx_dialect_nor_passes(heavy_after):
    """Printing a tile-level file back (no -p) loads the bulkred dialect only."""
    assert heavy_after["parse"] == []


class _Count:
    """Wraps verify_located, counting calls and noting whether the collector was on."""

    def __init__(self, real):
        self.real, self.calls, self.gc_on = real, 0, []

    def __call__(self, module):
        self.calls += 1
        self.gc_on.append(gc.isenabled())
        return self.real(module)


@pytest.fixture
def counted(monkeypatch):
    counts = {}
    for owner in (cli, printer, diagnostics):
        counts[owner.__name__.rsplit(".", 1)[-1]] = c = _Count(diagnostics.verify_located)
        monkeypatch.setattr(owner, "verify_located", c)
    return counts


@pytest.mark.parametrize(
    ("args", "in_cli", "in_printer"),
    [
        ([], 1, 0),
        (["-p", "lower-tile-reductions,legalize-for-target,lower-to-ptx"], 2, 0),
        (["-p", "lower-tile-reductions,legalize-for-target,lower-to-ptx", "--verify-each"], 4, 0),
        (["-p", "bulkred-to-ptx", "-t", "ptx"], 1, 1),  # the printer verifies the result
        (["-p", "lower-tile-reductions,lower-to-ptx", "-t", "ptx", "--verify-each"], 2, 1),
    ],
)
def test_cli_verifies_input_and_result_once(counted, capsys, args, in_cli, in_printer):
    assert cli.main([str(SEED), *args]) == 0
    assert capsys.readouterr().out
    assert (counted["cli"].calls, counted["printer"].calls) == (in_cli, in_printer)


def test_cli_compiles_with_the_collector_paused(counted, capsys):
    assert gc.isenabled()
    assert cli.main([str(SEED), "-p", "lower-tile-reductions"]) == 0
    assert counted["cli"].gc_on == [False, False]
    assert gc.isenabled()


def test_gc_paused_restores_the_state():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(KeyError), gc_paused():
        raise KeyError("x")
    assert gc.isenabled()


@dataclass(frozen=True)
class DropTerminators(ModulePass):
    """Breaks the IR: every kernel loses its func.return."""

    name = "test-drop-terminators"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in op.walk():
            if isinstance(f, func.FuncOp):
                f.body.block.last_op.detach()


@dataclass(frozen=True)
class Record(ModulePass):
    name = "test-record"
    ran: list = None  # type: ignore[assignment]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.ran.append(True)


def _seed():
    from bulkred_dialect.backend_ptx.runtime import context, parse

    return context(), parse(SEED.read_text(), str(SEED))


@pytest.mark.parametrize(
    ("options", "calls"),
    [
        ({}, 2),
        ({"verify_each": True}, 4),
        ({"verify_input": False, "verify_output": False}, 0),
        ({"verify_input": False, "verify_output": False, "verify_each": True}, 2),
    ],
)
def test_apply_passes_verify_counts(monkeypatch, options, calls):
    ctx, module = _seed()
    count = _Count(diagnostics.verify_located)
    monkeypatch.setattr(diagnostics, "verify_located", count)
    passes = build_passes("lower-tile-reductions,legalize-for-target,lower-to-ptx", available_passes())
    apply_passes(ctx, module, passes, **options)
    assert count.calls == calls
    assert count.gc_on == [False] * calls
    assert gc.isenabled()


def test_apply_passes_catches_broken_ir_at_the_end_or_at_once():
    ctx, module = _seed()
    ran: list = []
    with pytest.raises(LocatedError, match="seed_sum32.mlir:12:5: .*is not a terminator"):
        apply_passes(ctx, module, [DropTerminators(), Record(ran=ran)])
    assert ran == [True]  # found after the last pass
    ctx, module = _seed()
    ran.clear()
    with pytest.raises(LocatedError, match="seed_sum32.mlir:12:5: .*is not a terminator"):
        apply_passes(ctx, module, [DropTerminators(), Record(ran=ran)], verify_each=True)
    assert ran == []  # found before the next pass ran


# region The ptx ops' cheaper builder


def _lowered_text(text: str, target: str) -> str:
    from xdsl.printer import Printer
    from io import StringIO

    from bulkred_dialect.backend_ptx.runtime import context
    from bulkred_dialect.diagnostics import parse_module

    ctx = context()
    module = parse_module(ctx, text, "t.mlir")
    apply_passes(ctx, module, build_passes(f"bulkred-to-ptx{{target={target}}}", available_passes()))
    out = StringIO()
    Printer(stream=out, print_generic_format=True, print_properties_as_attributes=False).print_op(module)
    return out.getvalue()


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a", "sm_80"])
def test_ptx_ops_built_the_short_way_equal_irdl_builds(monkeypatch, target):
    """PtxInstruction's builder skips IRDL's argument building for ops of single
    operands and results; the lowered IR (generic form: every operand, type, property
    and attribute) is the same as with IRDL's builder for every op."""
    from bulkred_dialect.api import reduction_module
    from bulkred_dialect.ops.ptx import base

    seed = (ROOT / "examples" / "seed_sum32.mlir").read_text()
    texts = [seed]
    for kind, shape, dtype, axis in (("sum", (1000,), "float32", None), ("max", (64, 96), "bfloat16", 1)):
        texts.append(str(reduction_module(kind, shape, dtype, axis, "k")))
    fast = [_lowered_text(t, target) for t in texts]
    used = sum(1 for c in base._FIXED_COUNTS.values() if c is not None)
    assert used > 10  # the short way was taken, for many op classes
    monkeypatch.setattr(base, "_fixed_counts", lambda cls: None)
    slow = [_lowered_text(t, target) for t in texts]
    for f, s in zip(fast, slow):
        assert f == s


def test_ptx_op_builder_falls_back_for_wrong_counts():
    """A wrong operand count still gets IRDL's builder error, not a malformed op."""
    from xdsl.dialects.builtin import i32
    from xdsl.utils.test_value import create_ssa_value

    from bulkred_dialect.ops.ptx import arith as pa

    from bulkred_dialect.ops.ptx.base import PtxInstruction

    a = create_ssa_value(i32)
    with pytest.raises(ValueError, match="Expected 2 operand, but got 1"):
        PtxInstruction.__init__(pa.AddOp.__new__(pa.AddOp), operands=[a], result_types=[i32])
    op = pa.AddOp.__new__(pa.AddOp)
    PtxInstruction.__init__(op, operands=[a, a], result_types=[i32], properties={"type": None})
    assert tuple(op.operands) == (a, a) and "type" not in op.properties  # None properties dropped


# endregion


# region The parser's memo of types


class _ParserWithoutMemo(diagnostics.LocatedParser):
    parse_optional_type = diagnostics.Parser.parse_optional_type


def _parse_or_error(parser_cls, text: str) -> str:
    """The parsed module printed, or the parse error's text."""
    from bulkred_dialect.backend_ptx.runtime import context

    try:
        return str(parser_cls(context(), text, "in.mlir").parse_module())
    except Exception as e:  # a parse error, or xDSL's for a bad type
        return f"{type(e).__name__}: {e}"


def _chunks() -> list[tuple[str, str]]:
    out = []
    for path in sorted([*(ROOT / "tests" / "filecheck").rglob("*.mlir"), *(ROOT / "examples").glob("*.mlir")]):
        if "Output" in path.parts:
            continue
        for i, chunk in enumerate(path.read_text().split("// -----")):
            out.append((f"{path.relative_to(ROOT)}#{i}", chunk))
    return out


class _MemoAgainstXdsl(diagnostics.LocatedParser):
    """The memo's parser that, at each outermost type, first runs xDSL's
    ``parse_optional_type`` from the same place with the same state (its nested types
    xDSL's too), then goes back and runs the memo's; both must give an equal type (or
    raise the same error) and leave the parser at the same place. ``hits`` counts the
    types the memo gave without parsing: an object it returned before, where xDSL's
    parse made a new one."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.depth = 0  # 1 inside the memo's parse of an outermost type
        self.upstream = False  # inside xDSL's parse of an outermost type
        self.types = self.hits = 0
        self.mismatches: list[str] = []
        self.returned: dict[int, object] = {}  # what the memo returned, by id (kept alive)

    def parse_optional_type(self):
        if self.upstream:
            return diagnostics.Parser.parse_optional_type(self)
        if self.depth:
            return super().parse_optional_type()
        start = self._current_token.span.start
        self.upstream = True
        try:
            want, want_error = diagnostics.Parser.parse_optional_type(self), None
        except Exception as e:
            want, want_error = None, f"{type(e).__name__}: {e}"
        finally:
            self.upstream = False
        want_end = self._current_token.span.start
        self._resume_from(start)
        self.depth = 1
        try:
            got = super().parse_optional_type()
        except Exception as e:
            if f"{type(e).__name__}: {e}" != want_error:
                self.mismatches.append(f"at {start}: memo raised {type(e).__name__}: {e}, xDSL's {want_error or want}")
            raise
        finally:
            self.depth = 0
        self.types += 1
        if got is not want and self.returned.get(id(got)) is got:
            self.hits += 1
        self.returned[id(got)] = got
        if want_error is not None or got != want or self._current_token.span.start != want_end:
            self.mismatches.append(
                f"at {start}: memo {got} up to {self._current_token.span.start}, xDSL's {want_error or want} up to {want_end}"
            )
        return got


def test_the_type_memo_parses_every_test_input_as_xdsl_does():
    """Every lit input (valid and invalid, chunk by chunk) parses with the memo as
    without it: at each type (:class:`_MemoAgainstXdsl`), the memo's result and where
    the parser resumes are xDSL's, or the error is the same. The parser is the same
    code with and without the memo everywhere else, so the modules (or the errors) are
    the same. One parse of each input, each outermost type parsed twice (a second
    parse of the whole input without the memo, and both modules printed, took about
    twice as long); 5,529 types, 2,125 of them from the memo."""
    from bulkred_dialect.backend_ptx.runtime import context

    chunks = _chunks()
    assert len(chunks) > 150
    types = hits = 0
    for name, text in chunks:
        try:
            parser = _MemoAgainstXdsl(context(), text, "in.mlir")
        except Exception:
            continue  # refused by the lexer at the first token: no type parsed
        try:
            parser.parse_module()
        except Exception:
            pass  # an input's error: the same with and without the memo where a type raised it
        assert not parser.mismatches, f"{name}: " + "\n".join(parser.mismatches[:5])
        types, hits = types + parser.types, hits + parser.hits
    assert types > 2000 and hits > types // 4, (types, hits)  # the memo is exercised


def test_the_type_memo_returns_the_first_parse_and_keeps_spellings_apart():
    from bulkred_dialect.backend_ptx.runtime import context

    text = """
    "test.op"() : () -> (memref<4xf32, #bulkred.scope<local>>, memref<4xf32, #bulkred.scope<local>>)
    "test.op"() : () -> (memref<4xf32, #bulkred.scope<local>> , memref<4xf32,#bulkred.scope<local>>)
    "test.op"() : () -> (memref<4xf32>, memref<4xf32, 1>, memref<4xf32, #bulkred.scope<global>>)
    "test.op"() : () -> (memref<4xf32, #bulkred.scope<local> // a comment
      >, memref<4xf32, #bulkred.scope<local>
      >)
    "test.op"() : () -> (!ptx.ptr<global>, !ptx.ptr<global>, !ptx.ptr<shared::cta>, f32, f32)
    """
    ctx = context()
    ctx.allow_unregistered = True
    parser = diagnostics.LocatedParser(ctx, text, "in.mlir")
    module = parser.parse_module()
    types = [list(op.result_types) for op in module.ops]
    local = types[0][0]
    assert str(local) == "memref<4xf32, #bulkred.scope<local>>"
    assert types[0][1] is local and types[1][0] is local  # the same text: the first parse
    assert types[1][1] == local and types[1][1] is not local  # another spelling: parsed again
    assert [str(t) for t in types[2]] == ["memref<4xf32>", "memref<4xf32, 1 : i64>", "memref<4xf32, #bulkred.scope<global>>"]
    assert types[3] == [local, local]
    assert types[4][0] is types[4][1] and types[4][2] != types[4][0]
    # what was kept: texts that end with ">", without comments; not "f32"
    kept = {text for entries in parser._types.values() for text, _ in entries}
    assert "memref<4xf32, #bulkred.scope<local>>" in kept and "!ptx.ptr<global>" in kept
    assert not any("//" in k or not k.endswith(">") for k in kept)
    assert _parse_or_error(diagnostics.LocatedParser, text.replace("-> (", "-> (memref<4xf32, #bulkred.scope<local>>, memref<4xf32, #bulkred.scope<lokal>>, ", 1)) == _parse_or_error(_ParserWithoutMemo, text.replace("-> (", "-> (memref<4xf32, #bulkred.scope<local>>, memref<4xf32, #bulkred.scope<lokal>>, ", 1))


# endregion


def test_integer_attrs_are_made_once_and_equal_irdls():
    from xdsl.dialects.builtin import IntegerAttr, i32

    from bulkred_dialect.ops.ptx.base import integer_attr

    a = integer_attr(5, 64)
    assert a == IntegerAttr(5, 64) and integer_attr(5, 64) is a
    assert integer_attr(True, i32) == IntegerAttr(1, i32) and str(integer_attr(True, i32)) == "1 : i32"
    assert integer_attr(-1, i32) == IntegerAttr(-1, i32)
    with pytest.raises(Exception) as cached:
        integer_attr(2**40, i32)
    with pytest.raises(Exception) as plain:
        IntegerAttr(2**40, i32)
    assert type(cached.value) is type(plain.value) and str(cached.value) == str(plain.value)


# region scf -> cf in one walk

_NESTED_SCF = """
func.func @k(%B: memref<4xi32, #bulkred.scope<global>>, %n: i32, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1 : i32
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %one) -> (i32) {
    %p = arith.cmpi ult, %i, %m : index
    %a = scf.if %p -> (i32) {
      %w = scf.while (%x = %acc) : (i32) -> i32 {
        %q = arith.cmpi slt, %x, %n : i32
        scf.condition(%q) %x : i32
      } do {
      ^bb0(%y: i32):
        %inner = scf.for %j = %c0 to %c4 step %c1 iter_args(%z = %y) -> (i32) {
          %z2 = arith.addi %z, %z : i32
          scf.yield %z2 : i32
        }
        scf.yield %inner : i32
      }
      scf.yield %w : i32
    } else {
      %s = scf.index_switch %i -> i32
      case 1 {
        scf.yield %n : i32
      }
      default {
        scf.yield %acc : i32
      }
      scf.yield %s : i32
    }
    memref.store %a, %B[%i] : memref<4xi32, #bulkred.scope<global>>
    scf.yield %a : i32
  }
  func.return
}
"""


def test_scf_to_cf_in_one_walk_equals_the_walk_to_a_fixed_point(monkeypatch):
    """convert_scf_to_cf walks once (apply_recursively=False): on loops, ifs, whiles and
    switches nested four deep it gives the IR that walking until nothing changes gives,
    and no scf op is left."""
    from xdsl.pattern_rewriter import PatternRewriteWalker

    from bulkred_dialect.backend_ptx.runtime import context
    from bulkred_dialect.passes.lower_to_ptx import scf_to_cf

    def lowered() -> str:
        module = diagnostics.parse_module(context(), _NESTED_SCF, "nested.mlir")
        scf_to_cf.convert_scf_to_cf(module)
        diagnostics.verify_located(module)
        assert not [op.name for op in module.walk() if op.name.startswith("scf.")]
        return str(module)

    once = lowered()

    class ToAFixedPoint(PatternRewriteWalker):
        def __init__(self, *args, **kwargs):
            kwargs["apply_recursively"] = True
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(scf_to_cf, "PatternRewriteWalker", ToAFixedPoint)
    assert lowered() == once
    assert once.count("cf.cond_br") >= 4


# endregion
