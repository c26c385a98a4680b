"""The target model (one place decides what a target can run) and bulkred-opt's error handling."""

from __future__ import annotations

import pytest

from bulkred_dialect.cli import main
from bulkred_dialect.ops.target import Requirement, Target, TargetError, check_target


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
    assert "Unrecognized passes" in capsys.readouterr().err


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
