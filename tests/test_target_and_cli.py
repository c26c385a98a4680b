"""The target model (one place decides what a target can run) and bulkred-opt's error handling."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64

from bulkred_dialect import cli
from bulkred_dialect.cli import main
from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops.target import KNOWN_TARGETS, Requirement, Target, TargetError, check_target
from bulkred_dialect.passes.check_target import resolve_target

ROOT = Path(__file__).resolve().parents[1]
KNOWN = ", ".join(KNOWN_TARGETS)


@pytest.mark.parametrize(
    ("name", "sm", "suffix"), [("sm_90a", 90, "a"), ("sm_100a", 100, "a"), ("sm_90", 90, ""), ("sm_100f", 100, "f")]
)
def test_parse(name, sm, suffix):
    t = Target.parse(name)
    assert (t.sm, t.suffix, t.name) == (sm, suffix, name)


@pytest.mark.parametrize("bad", ["sm90", "sm_", "compute_90", "sm_90x", ""])
def test_parse_rejects(bad):
    with pytest.raises(TargetError, match="'target' must look like"):
        Target.parse(bad)


@pytest.mark.parametrize("name", KNOWN_TARGETS)
def test_parse_every_known_target(name):
    assert Target.parse(name).name == name


def test_known_targets_span_sm80_to_sm121f():
    assert KNOWN_TARGETS[0] == "sm_80" and KNOWN_TARGETS[-1] == "sm_121f"
    assert {"sm_90a", "sm_100", "sm_100a", "sm_100f", "sm_103a", "sm_110a", "sm_120", "sm_121a"} <= set(KNOWN_TARGETS)


@pytest.mark.parametrize("unknown", ["sm_101a", "sm_101", "sm_75", "sm_1000a", "sm_90f", "sm_80a"])
def test_parse_rejects_unknown_sm(unknown):
    with pytest.raises(TargetError) as e:
        Target.parse(unknown)
    assert str(e.value) == f"'target' must be one of {KNOWN}, got '{unknown}'"


@pytest.mark.parametrize(
    ("req", "target", "ok"),
    [
        (Requirement(sm=90), "sm_90a", True),
        (Requirement(sm=90), "sm_100a", True),
        (Requirement(sm=100), "sm_90a", False),
        (Requirement(sm=100), "sm_100", True),
        (Requirement(sm=100, arch_specific=True), "sm_100", False),
        (Requirement(sm=100, arch_specific=True), "sm_100a", True),
        (Requirement(sm=100, arch_specific=True), "sm_103a", True),
        (Requirement(sm=90, arch_specific=True), "sm_100a", False),
    ],
)
def test_requirement(req, target, ok):
    assert req.satisfied_by(Target.parse(target)) is ok


def test_check_target_message():
    with pytest.raises(TargetError) as e:
        check_target("redux.sync.max.f32", Requirement(sm=100, arch_specific=True, ptx=(8, 6)), Target.parse("sm_90a"))
    assert str(e.value) == "'redux.sync.max.f32' needs sm_100a and PTX ISA 8.6, but the target is sm_90a"


def test_cli_reports_verifier_error_with_location(tmp_path, capsys):
    f = tmp_path / "bad.mlir"
    f.write_text(
        "func.func @f(%x: f32, %m: i32) {\n"
        "  %0 = ptx.redux.sync add f32 %x, %m : f32\n"
        "  func.return\n"
        "}\n"
    )
    assert main([str(f)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{f}:2:3: error: 'ptx.redux.sync' '.op' add is not valid with '.type' f32")
    assert "Traceback" not in err


def test_cli_verify_diagnostics_exit_zero(tmp_path, capsys):
    f = tmp_path / "bad.mlir"
    f.write_text("func.func @f(%s: i32, %m: i32) {\n  %0 = ptx.redux.sync min b32 %s, %m : i32\n  func.return\n}\n")
    assert main([str(f), "--verify-diagnostics"]) == 0
    assert "'.op' min is not valid with '.type' b32" in capsys.readouterr().out


def test_cli_unknown_pass(capsys, tmp_path):
    f = tmp_path / "ok.mlir"
    f.write_text("builtin.module {}\n")
    assert main([str(f), "-p", "no-such-pass"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bulkred-opt: error: unknown pass 'no-such-pass' (bulkred passes: check-target, ")
    assert len(err.splitlines()) == 1


def test_cli_unknown_pass_suggests_the_closest(capsys, tmp_path):
    f = tmp_path / "ok.mlir"
    f.write_text("builtin.module {}\n")
    assert main([str(f), "-p", "bulkred-to-ptx,lower-bulk-op"]) == 1
    assert "unknown pass 'lower-bulk-op' (did you mean 'lower-bulk-ops'? " in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["-p", "lower-tile-reductions", "-p", "lower-to-ptx"],
            "-p given twice ('lower-tile-reductions' and 'lower-to-ptx'); give it once "
            "(passes in one pipeline are separated by commas)",
        ),
        (
            ["--passes=check-target", "-p", "check-target"],
            "-p given twice ('check-target' and 'check-target'); give it once "
            "(passes in one pipeline are separated by commas)",
        ),
        (["-t", "ptx", "--target", "mlir"], "--target given twice ('ptx' and 'mlir'); give it once"),
        (["-o", "a.mlir", "-o", "b.mlir"], "-o given twice ('a.mlir' and 'b.mlir'); give it once"),
    ],
)
def test_cli_option_given_twice_is_an_error(tmp_path, capsys, args, message):
    f = tmp_path / "ok.mlir"
    f.write_text("builtin.module {}\n")
    assert main([str(f), *args]) == 1
    assert capsys.readouterr().err == f"bulkred-opt: error: {message}\n"
    assert not (tmp_path / "a.mlir").exists()


def test_cli_options_given_once_still_work(tmp_path, capsys):
    f = tmp_path / "ok.mlir"
    f.write_text("func.func @ok() {\n  func.return\n}\n")
    out = tmp_path / "out.ptx"
    assert main([str(f), "-p", "bulkred-to-ptx", "-t", "ptx", "-o", str(out)]) == 0
    assert ".entry ok" in out.read_text()


_UNLOWERABLE = (
    "func.func @k(%a: memref<16xf32, #bulkred.scope<shared>>, %b: memref<1xf32, #bulkred.scope<shared>>) {\n"
    "  bulkred.reduce sum cta %a, %b : memref<16xf32, #bulkred.scope<shared>>, memref<1xf32, #bulkred.scope<shared>>\n"
    "  func.return\n"
    "}\n"
)


@pytest.mark.parametrize("pipeline", ["lower-tile-reductions{explain=true}", "bulkred-to-ptx{explain=true}"])
def test_cli_failing_dispatch_with_explain_prints_the_table_once(tmp_path, capsys, pipeline):
    f = tmp_path / "k.mlir"
    f.write_text(_UNLOWERABLE)
    assert main([str(f), "-p", pipeline]) == 1
    captured = capsys.readouterr()
    assert (captured.out + captured.err).count("dispatch of 'bulkred.reduce'") == 1
    assert captured.out.startswith(f"// dispatch of 'bulkred.reduce' at {f}:2:3 on sm_90a\n")
    assert "// chosen: none" in captured.out
    assert captured.err == (
        f"{f}:2:3: error: 'bulkred.reduce' no lowering variant applies on sm_90a "
        "(explain=true printed the dispatch table)\n"
    )


def test_cli_failing_dispatch_without_explain_carries_the_table(tmp_path, capsys):
    f = tmp_path / "k.mlir"
    f.write_text(_UNLOWERABLE)
    assert main([str(f), "-p", "lower-tile-reductions"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"{f}:2:3: error: 'bulkred.reduce' no lowering variant applies on sm_90a\n")
    assert captured.err.count("dispatch of 'bulkred.reduce'") == 1


def test_cli_split_input_continues_after_error(tmp_path, capsys):
    f = tmp_path / "split.mlir"
    f.write_text(
        "func.func @bad(%s: i32, %m: i32) {\n  %0 = ptx.redux.sync min b32 %s, %m : i32\n  func.return\n}\n"
        "// -----\n"
        "func.func @good(%s: i32, %m: i32) {\n  %0 = ptx.redux.sync min s32 %s, %m : i32\n  func.return\n}\n"
    )
    assert main([str(f), "--split-input-file"]) == 1
    captured = capsys.readouterr()
    assert "@good" in captured.out
    assert f"{f}:2:3: error:" in captured.err


# region bulkred-opt: pass pipeline and output target specs


@pytest.fixture
def ok_file(tmp_path):
    f = tmp_path / "ok.mlir"
    f.write_text("func.func @ok() {\n  func.return\n}\n")
    return f


def _one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


@pytest.mark.parametrize(
    ("flag", "spec", "message"),
    [
        (
            "-p",
            "lower-tile-reductions{target=sm_100a",
            "pass pipeline 'lower-tile-reductions{target=sm_100a' column 37: "
            "malformed pass arguments, expected either a space or `}` here",
        ),
        (
            "-p",
            "lower-tile-reductions{target=}",
            "pass pipeline 'lower-tile-reductions{target=}' column 30: unknown argument value, "
            "wrap argument in quotes to pass arbitrary string values",
        ),
        (
            "-p",
            "lower-tile-reductions{target=sm_100a,explain=true}",
            "pass pipeline 'lower-tile-reductions{target=sm_100a,explain=true}' column 45: "
            "malformed pass arguments, expected either a space or `}` here",
        ),
        ("-p", ",", "pass pipeline ',' column 1: expected pass name here"),
        ("-p", "a,,b", "pass pipeline 'a,,b' column 3: expected pass name here"),
        (
            "-t",
            "ptx{target=sm_90a",
            "output target 'ptx{target=sm_90a' column 18: "
            "malformed pass arguments, expected either a space or `}` here",
        ),
        ("-t", "ptx,mlir", "output target 'ptx,mlir': expected one target, got 2"),
    ],
)
def test_cli_spec_syntax_error_is_one_line(ok_file, capsys, flag, spec, message):
    """xDSL's ArgSpecParseError is a BaseException: it must still become one error line."""
    assert main([str(ok_file), flag, spec]) == 1
    assert _one_error_line(capsys) == f"bulkred-opt: error: {message}"


@pytest.mark.parametrize(
    ("flag", "spec", "message"),
    [
        ("-p", "lower-tile-reductions{explain=maybe}", "'explain' of lower-tile-reductions must be true or false, got 'maybe'"),
        ("-p", "lower-tile-reductions{explain}", "'explain' of lower-tile-reductions must be true or false, got no value"),
        ("-p", "bulkred-to-ptx{explain=1}", "'explain' of bulkred-to-ptx must be true or false, got 1"),
        ("-p", "lower-tile-reductions{explain=true,false}", "'explain' of lower-tile-reductions must be true or false, got true,false"),
        ("-p", "lower-tile-reductions{target=90}", "'target' of lower-tile-reductions must be a target name such as sm_90a, got 90"),
        ("-p", "check-target{target=true}", "'target' of check-target must be a target name such as sm_90a, got true"),
        ("-t", "ptx{assemble=yes}", "'assemble' of output target ptx must be true or false, got 'yes'"),
        ("-p", "lower-tile-reductions{nope=1}", "'nope' is not an option of lower-tile-reductions (options: target, explain)"),
        (
            "-p",
            "lower-tile-reductions{target=sm_100a target=sm_90a}",
            "pass pipeline 'lower-tile-reductions{target=sm_100a target=sm_90a}' column 38: "
            "option 'target' of lower-tile-reductions is given twice",
        ),
        (
            "-p",
            "check-target{target=sm_90a},bulkred-to-ptx{explain=true explain=false}",
            "pass pipeline 'check-target{target=sm_90a},bulkred-to-ptx{explain=true explain=false}' column 57: "
            "option 'explain' of bulkred-to-ptx is given twice",
        ),
        ("-p", "check-target{target=sm_9x}", "check-target: 'target' must look like sm_90, sm_90a or sm_100a, got 'sm_9x'"),
        ("-p", "check-target{target=sm_101a}", f"check-target: 'target' must be one of {KNOWN}, got 'sm_101a'"),
        ("-t", "ptx{target=sm_75}", f"output target ptx: 'target' must be one of {KNOWN}, got 'sm_75'"),
    ],
)
def test_cli_option_error_names_pass_option_and_value(ok_file, capsys, flag, spec, message):
    assert main([str(ok_file), flag, spec]) == 1
    assert _one_error_line(capsys) == f"bulkred-opt: error: {message}"


def test_cli_option_errors_come_before_reading_input(tmp_path, capsys):
    assert main([str(tmp_path / "missing.mlir"), "-p", "lower-tile-reductions{explain=maybe}"]) == 1
    assert "'explain' of lower-tile-reductions" in _one_error_line(capsys)


def test_cli_same_option_in_two_passes_is_fine(ok_file, capsys):
    assert main([str(ok_file), "-p", "check-target{target=sm_90a},check-target{target=sm_100a}"]) == 0
    assert "func.func @ok" in capsys.readouterr().out


def test_cli_valid_options_still_apply(ok_file, capsys):
    assert main([str(ok_file), "-p", "lower-tile-reductions{target=sm_100a explain=true}", "-t", "ptx{target=sm_100a}"]) == 0
    assert ".target sm_100a" in capsys.readouterr().out


# endregion

# region bulkred-opt: errors while parsing


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("%0 = ptx.max3 %a, %a, %a : i32", "'ptx.max3' Expected attribute f32 but got i32"),
        ("%0 = ptx.mov.unpack %a : i32", "'ptx.mov.unpack' Expected attribute vector<2xf32> but got i32"),
        ("bulkred.reduce sum thread %a, %a : i32, i32", "'bulkred.reduce' i32 should be of base attribute memref"),
        (
            "%0 = arith.constant 99999999999999999999 : i64",
            "'arith.constant' Integer value 99999999999999999999 is out of range for type i64",
        ),
    ],
)
def test_cli_op_construction_error_is_located(tmp_path, capsys, line, message):
    f = tmp_path / "bad.mlir"
    f.write_text(f"func.func @f(%a: i32) {{\n\n    {line}\n  func.return\n}}\n")
    assert main([str(f)]) == 1
    assert _one_error_line(capsys).startswith(f"{f}:3:5: error: {message}")


def test_cli_op_construction_error_after_split_keeps_line(tmp_path, capsys):
    f = tmp_path / "bad.mlir"
    f.write_text("func.func @f() {\n  func.return\n}\n// -----\nfunc.func @g(%a: i32) {\n  %0 = ptx.max3 %a, %a, %a : i32\n  func.return\n}\n")
    assert main([str(f), "--split-input-file"]) == 1
    assert _one_error_line(capsys).startswith(f"{f}:6:3: error: 'ptx.max3' ")


@pytest.mark.parametrize(
    "text",
    [
        "func.func @deep() attributes {a = " + "[" * 5000 + "} {}\n",
        "func.func @deep() {\n" + " scf.execute_region {" * 2000 + "\n",
    ],
    ids=["attribute", "regions"],
)
def test_cli_deep_nesting_is_located(tmp_path, capsys, text):
    f = tmp_path / "deep.mlir"
    f.write_text(text)
    assert main([str(f)]) == 1
    assert re.fullmatch(rf"{re.escape(str(f))}:\d+:\d+: error: input nests too deeply", _one_error_line(capsys))


def test_cli_recursion_after_parsing_is_an_error_not_a_crash(ok_file, capsys, monkeypatch):
    def deep(self, text, offset):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(cli.BulkredOptMain, "_process_chunk", deep)
    assert main([str(ok_file)]) == 1
    assert _one_error_line(capsys) == f"{ok_file}: error: input nests too deeply"


# endregion

# region bulkred-opt: the fuzz finds of issue 22 (section 3)

_G = "#bulkred.scope<global>"
_BOOL_STORE = f"""func.func @k(%A: memref<4xi1, {_G}>) {{
  %c0 = arith.constant 0 : index
  %t = arith.constant true
  memref.store %t, %A[%c0] : memref<4xi1, {_G}>
  func.return
}}
"""


@pytest.mark.parametrize("args", [["-p", "lower-to-ptx"], ["-p", "bulkred-to-ptx", "-t", "ptx"]])
def test_cli_stores_a_bool_as_one_byte(tmp_path, capsys, args):
    """An i1 stored to a global buffer was an internal error (exit 2): now st.b8 of 1."""
    f = tmp_path / "bool.mlir"
    f.write_text(_BOOL_STORE)
    assert main([str(f), *args]) == 0
    out = capsys.readouterr().out
    assert ("st.global.b8" if "ptx" in args else "ptx.st b8") in out


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        (
            f"""  %c0 = arith.constant 0 : index
  %x = memref.load %A[%c0] : memref<4xi1, {_G}>
  %c9 = arith.constant 9 : index
  memref.store %x, %A[%c9] : memref<4xi1, {_G}>""",
            4,
            f"'memref.store' 'indices' #0 must be in [0, 4) for dimension 0 of memref<4xi1, {_G}>, got 9",
        ),
        (
            f"""  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = memref.subview %B[3, 0] [2, 16] [1, 1] : memref<4x16xf32, {_G}> to memref<2x16xf32, strided<[16, 1], offset: 48>, {_G}>
  %y = memref.load %v[%c1, %c0] : memref<2x16xf32, strided<[16, 1], offset: 48>, {_G}>""",
            3,
            "'memref.subview' dimension 0 of the view must lie in [0, 4)",
        ),
        (
            f"""  %v = memref.subview %B[0, 0] [1, 4294967296] [1, 1] : memref<4x16xf32, {_G}> to memref<1x4294967296xf32, strided<[16, 1]>, {_G}>""",
            1,
            "'memref.subview' dimension 1 of the view must lie in [0, 16)",
        ),
        (
            f"""  %v = memref.subview %B[1, 0] [2, 16] [1, 1] : memref<4x16xf32, {_G}> to memref<2x16xf32, strided<[16, 1]>, {_G}>""",
            1,
            f"'memref.subview' result type must be memref<2x16xf32, strided<[16, 1], offset: 16>, {_G}>",
        ),
    ],
    ids=["constant-index", "subview-past-the-end", "subview-huge-size", "subview-declared-type"],
)
@pytest.mark.parametrize("args", [[], ["-p", "bulkred-to-ptx", "-t", "ptx"]], ids=["verify", "pipeline"])
def test_cli_refuses_memory_outside_the_buffer(tmp_path, capsys, body, line, message, args):
    """Accepted before (and lowered to loads past the end of the buffer): now one
    located line with exit status 1, whatever the pipeline."""
    f = tmp_path / "bad.mlir"
    f.write_text(
        f"func.func @k(%A: memref<4xi1, {_G}>, %B: memref<4x16xf32, {_G}>) {{\n{body}\n  func.return\n}}\n"
    )
    assert main([str(f), *args]) == 1
    assert _one_error_line(capsys).startswith(f"{f}:{line + 1}:3: error: {message}")


# endregion

# region bulkred-opt: --split-input-file


def test_split_only_on_exact_separator_lines(tmp_path, capsys):
    f = tmp_path / "split.mlir"
    f.write_text(
        "func.func @a() {\n"
        "  // ---------- a section rule\n"
        "  // -----x\n"
        "  func.return\n"
        "}\n"
        "// -----  \n"
        "func.func @b(%x: f32, %m: i32) {\n"
        "  %0 = ptx.redux.sync add f32 %x, %m : f32\n"
        "  func.return\n"
        "}\n"
        "// -----\r\n"
        "func.func @c() {\n"
        "  func.return\n"
        "}\n"
    )
    assert main([str(f), "--split-input-file"]) == 1
    captured = capsys.readouterr()
    assert captured.out.count("// -----") == 2
    assert "@a" in captured.out and "@c" in captured.out
    assert captured.err.startswith(f"{f}:8:3: error: 'ptx.redux.sync' '.op' add is not valid with '.type' f32")


@pytest.mark.parametrize(
    ("text", "modules", "last_empty"),
    [
        ("", 1, True),
        ("\n  \n", 1, True),
        ("// only a comment\n", 1, True),
        ("func.func @a() {\n  func.return\n}\n// -----\n", 2, True),
        ("func.func @a() {\n  func.return\n}\n// -----\n// -----\nfunc.func @b() {\n  func.return\n}\n", 3, False),
        ("// -----\n", 2, True),
    ],
    ids=["empty", "blank", "comment", "trailing-separator", "empty-middle", "separator-only"],
)
def test_split_empty_chunk_is_an_empty_module(tmp_path, capsys, text, modules, last_empty):
    """As mlir-opt: an empty chunk (or input) prints an empty module; no error."""
    f = tmp_path / "split.mlir"
    f.write_text(text)
    assert main([str(f), "--split-input-file"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.count("builtin.module {") == modules
    assert captured.out.count("// -----") == modules - 1
    assert captured.out.count("builtin.module {\n}\n") == modules - (0 if last_empty else 1) - ("@a" in text)
    assert captured.out.rstrip().endswith("builtin.module {\n}") == last_empty


def test_empty_input_without_split_is_an_empty_module(tmp_path, capsys):
    f = tmp_path / "empty.mlir"
    f.write_text("")
    assert main([str(f), "-p", "bulkred-to-ptx", "-t", "ptx"]) == 0
    out = capsys.readouterr().out
    assert ".address_size 64" in out and ".entry" not in out


@pytest.mark.parametrize(
    ("text", "where", "token"),
    [
        ("}\n", "1:1", "}"),
        ("func.func @a() {\n  func.return\n}\n}\n", "4:1", "}"),
        ("\n\n  )\n", "3:3", ")"),
        ("/" * 400 + "\n}\n", "2:1", "}"),  # a long comment line: the emptiness check is linear
    ],
)
def test_stray_token_is_a_located_error(tmp_path, capsys, text, where, token):
    f = tmp_path / "stray.mlir"
    f.write_text(text)
    assert main([str(f)]) == 1
    assert _one_error_line(capsys) == f"{f}:{where}: error: expected an operation, got '{token}'"


# endregion

# region bulkred-opt: the catch-all


def _raising_run(exc: BaseException):
    def run(self):
        raise exc

    return run


class _Odd(BaseException):
    pass


class _Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no")


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(3)])
def test_cli_does_not_swallow_interrupts(ok_file, monkeypatch, exc):
    monkeypatch.setattr(cli.BulkredOptMain, "run", _raising_run(exc))
    with pytest.raises(type(exc)):
        main([str(ok_file)])


@pytest.mark.parametrize(
    ("exc", "shown"),
    [(_Odd("first line\nsecond"), "_Odd: first line"), (_Unprintable(), "_Unprintable: _Unprintable"), (TypeError(), "TypeError: TypeError")],
)
def test_cli_internal_error_is_reported_not_raised(ok_file, capsys, monkeypatch, exc, shown):
    monkeypatch.delenv("BULKRED_TRACEBACK", raising=False)
    monkeypatch.setattr(cli.BulkredOptMain, "run", _raising_run(exc))
    assert main([str(ok_file)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[0] == f"bulkred-opt: internal error: {shown}"
    assert "Traceback" not in err


# endregion

# region resolve_target and the bulkred.target attribute


def _module(attr=None) -> ModuleOp:
    return ModuleOp([], attributes={} if attr is None else {"bulkred.target": attr})


def test_resolve_target_precedence():
    assert resolve_target(_module(), None).name == "sm_90a"
    assert resolve_target(_module(StringAttr("sm_100a")), None).name == "sm_100a"
    assert resolve_target(_module(StringAttr("sm_100a")), "sm_103a").name == "sm_103a"
    assert resolve_target(_module(IntegerAttr(90, i64)), "sm_100a").name == "sm_100a"


@pytest.mark.parametrize(
    ("attr", "message"),
    [
        (IntegerAttr(90, i64), "'bulkred.target' must be a string such as \"sm_90a\", got 90 : i64"),
        (StringAttr("sm_101a"), f"'bulkred.target' must be one of {KNOWN}, got 'sm_101a'"),
        (StringAttr("hopper"), "'bulkred.target' must look like sm_90, sm_90a or sm_100a, got 'hopper'"),
    ],
)
def test_resolve_target_rejects_bad_attribute(attr, message):
    with pytest.raises(LocatedError) as e:
        resolve_target(_module(attr), None)
    assert e.value.message == message
    assert str(e.value).endswith(f"error: 'builtin.module' {message}")


def test_cli_bad_target_attribute_is_located(tmp_path, capsys):
    f = tmp_path / "t.mlir"
    f.write_text('\nbuiltin.module attributes {bulkred.target = 90} {\n}\n')
    assert main([str(f), "-p", "check-target"]) == 1
    assert _one_error_line(capsys) == (
        f"{f}:2:1: error: 'builtin.module' 'bulkred.target' must be a string such as \"sm_90a\", got 90 : i64"
    )


# endregion

# region tools/test.sh


def _fake_checkout(tmp_path, pip_says: str, pip_status: int):
    """tools/setup.sh and test.sh in ``tmp_path`` with a fake .venv whose python passes
    every check (as an older install would) and whose ``pip install`` says ``pip_says``;
    its lit and pytest print REACHED."""
    (tmp_path / "tools").mkdir()
    for name in ("setup.sh", "test.sh"):
        (tmp_path / "tools" / name).write_text((ROOT / "tools" / name).read_text())
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    fake = tmp_path / ".venv" / "bin" / "python"
    fake.parent.mkdir(parents=True)
    fake.write_text(
        "#!/bin/sh\n"
        'case "$*" in\n'
        f'  *"pip install"*) printf \'%s\\n\' "{pip_says}"; exit {pip_status};;\n'
        '  *"print(hashlib"*) echo "not the stamp";;\n'
        "  *) exit 0;;\n"  # the import checks of an older install pass
        "esac\n"
    )
    fake.chmod(0o755)
    for tool in ("lit", "pytest"):
        t = fake.parent / tool
        t.write_text("#!/bin/sh\necho REACHED\nexit 0\n")
        t.chmod(0o755)
    return fake


def _run(tmp_path, script, fake):
    r = subprocess.run(["bash", script], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHON": str(fake)})
    return r.returncode, r.stdout + r.stderr


def test_test_sh_fails_when_pip_install_fails(tmp_path):
    """A failed `pip install -e .[test]` stops tools/setup.sh and so tools/test.sh, even
    when an older install would pass the import check; pip's error is shown, its
    harmless warnings are not."""
    fake = _fake_checkout(tmp_path, "WARNING: Running pip as the 'root' user\nERROR: no network", 1)
    status, out = _run(tmp_path, "tools/test.sh", fake)
    assert status != 0, out
    assert "setup: failed: .venv/bin/python -m pip install -e '.[test]'" in out
    assert "ERROR: no network" in out
    assert "WARNING: Running pip as" not in out
    assert "REACHED" not in out


def test_setup_sh_shows_only_real_warnings_on_success(tmp_path):
    fake = _fake_checkout(
        tmp_path,
        "WARNING: Location 'file:///x/' is ignored: it is neither a file nor a directory.\n"
        "[notice] A new release of pip is available\n"
        "ERROR: pip's dependency resolver does not currently take into account all the packages",
        0,
    )
    status, out = _run(tmp_path, "tools/setup.sh", fake)
    assert status == 0, out
    assert "ERROR: pip's dependency resolver" in out
    assert "Location" not in out and "[notice]" not in out
    assert out.strip().endswith("setup: done")


# endregion
