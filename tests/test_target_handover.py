"""The target is resolved once, at the boundary, and travels as a typed ``Target``.

``compile_tile_module(module, "sm_90a")`` parses the name once and composes pass
objects (no pipeline text); ``bulkred-to-ptx`` hands its ``Target`` to every stage;
``bulkred-opt -p ... -t ptx`` hands the pipeline's target to the printer as an
argument; what a target allows (cluster launches, static shared memory) is decided in
ops/target.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bulkred_dialect import cli, pipeline
from bulkred_dialect.backend_ptx import printer, runtime
from bulkred_dialect.ops import target as target_mod
from bulkred_dialect.ops.target import (
    CLUSTER_LAUNCH,
    Target,
    TargetError,
    cluster_launch_problem,
    max_static_shared,
)
from bulkred_dialect.passes.bulkred_to_ptx import BulkredToPtxPass
from bulkred_dialect.passes.check_target import CheckTargetPass
from bulkred_dialect.passes.targeting import TargetedPass

ROOT = Path(__file__).resolve().parents[1]
SEED = (ROOT / "examples" / "seed_sum32.mlir").read_text()


@pytest.fixture
def no_cache(monkeypatch):
    monkeypatch.setenv("BULKRED_CACHE", "0")


@pytest.fixture
def parse_count(monkeypatch) -> list[str]:
    """Every name ``Target.parse`` is called with, from now on."""
    calls: list[str] = []
    real = Target.parse

    def counting(name):
        calls.append(name)
        return real(name)

    monkeypatch.setattr(Target, "parse", staticmethod(counting))
    return calls


def test_compile_tile_module_parses_the_target_once(no_cache, parse_count):
    module = runtime.parse(SEED)
    parse_count.clear()
    mod = runtime.compile_tile_module(module, "sm_90a")
    assert mod.arch == "sm_90a" and ".target sm_90a" in mod.ptx
    assert len(parse_count) <= 1, parse_count


def test_compile_tile_module_composes_pass_objects(no_cache, monkeypatch):
    """No pipeline text is built or parsed when no ``pipeline=`` is given."""
    monkeypatch.setattr(pipeline, "build_passes", lambda *a: pytest.fail("pipeline text parsed"))
    seen: list[object] = []
    real = BulkredToPtxPass.apply
    monkeypatch.setattr(BulkredToPtxPass, "apply", lambda self, ctx, op: (seen.append(self.target), real(self, ctx, op)))
    runtime.compile_tile_module(runtime.parse(SEED), Target.parse("sm_100a"))
    assert seen == [Target(100, "a")]


def test_bulkred_to_ptx_hands_its_target_object_to_each_stage(monkeypatch):
    from bulkred_dialect.passes import bulkred_to_ptx

    given: dict[str, object] = {}
    for name in ("LowerTileReductionsPass", "LegalizeForTargetPass", "LowerToPtxPass", "CheckTargetPass"):
        cls = getattr(bulkred_to_ptx, name)
        real = cls.apply

        def apply(self, ctx, op, real=real, name=name):
            given[name] = self.target
            return real(self, ctx, op)

        monkeypatch.setattr(cls, "apply", apply)
    BulkredToPtxPass(target="sm_100a").apply(runtime.context(), runtime.parse(SEED))
    assert given and all(t == Target(100, "a") and isinstance(t, Target) for t in given.values()), given


def test_targeted_passes_hold_a_target():
    p = CheckTargetPass(target="sm_100a")
    assert isinstance(p, TargetedPass) and p.target == Target(100, "a")
    assert isinstance(BulkredToPtxPass(target="sm_90a").target, Target)
    assert BulkredToPtxPass().target is None
    with pytest.raises(TargetError, match="got 'hopper'"):
        CheckTargetPass(target="hopper")


def test_pipeline_text_gives_a_target_parsed_once(parse_count):
    (p,) = pipeline.build_passes("bulkred-to-ptx{target=sm_100a explain=true}", pipeline.available_passes())
    assert p.target == Target(100, "a") and p.explain and parse_count == ["sm_100a"]


@pytest.mark.parametrize(
    "spec, message",
    [
        ("bulkred-to-ptx{target=90}", "'target' of bulkred-to-ptx must be a target name such as sm_90a, got 90"),
        ("check-target{target=sm_101a}", "check-target: 'target' must be one of sm_80, "),
        ("bulkred-to-ptx{target=hopper}", "must look like sm_90, sm_90a or sm_100a, got 'hopper'"),
    ],
)
def test_pipeline_target_option_messages(spec, message):
    with pytest.raises(pipeline.OptionError) as e:
        pipeline.build_passes(spec, pipeline.available_passes())
    assert message in str(e.value)


def test_ptx_output_target_holds_a_target():
    t = printer.PtxTarget(target="sm_100a")
    assert t.target == Target(100, "a")
    with pytest.raises(TargetError):
        printer.PtxTarget(target="sm_1")


@pytest.mark.parametrize("target", ["sm_100a", "sm_90a"])
def test_cli_hands_the_pipeline_target_to_the_printer(tmp_path, capsys, target):
    src = tmp_path / "seed.mlir"
    src.write_text(SEED)
    assert cli.main([str(src), "-p", f"bulkred-to-ptx{{target={target}}}", "-t", "ptx"]) == 0
    assert f".target {target}\n" in capsys.readouterr().out


def test_cli_output_target_option_wins(tmp_path, capsys):
    src = tmp_path / "k.mlir"
    src.write_text("func.func @k() {\n  func.return\n}\n")
    assert cli.main([str(src), "-p", "check-target{target=sm_90a}", "-t", "ptx{target=sm_100a}"]) == 0
    assert ".target sm_100a\n" in capsys.readouterr().out


def test_what_a_target_allows_lives_in_ops_target():
    assert CLUSTER_LAUNCH.sm == 90 and CLUSTER_LAUNCH.ptx == (7, 8)
    assert cluster_launch_problem((2, 1, 1), Target(90, "a")) is None
    assert cluster_launch_problem((1, 1, 1), Target(80)) is None
    assert cluster_launch_problem((2, 1, 1), Target(80)) == "a cluster launch [2, 1, 1] needs sm_90, but the target is sm_80"
    assert max_static_shared(Target(90, "a")) == 232448 and max_static_shared(Target(90)) == 48 * 1024
    assert target_mod.static_shared_hint(Target(90)) == "; sm_90a allows 232448"
    assert not hasattr(printer, "_CLUSTER_SM")
