"""``pipeline.pipeline_passes``: ``lower_tile_module(pipeline=...)`` parses and checks each
spec text once per process, and every call still gets new pass objects equal to what
building the text again gives; a bad spec raises its error on every call."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from xdsl.passes import ModulePass

from bulkred_dialect import pipeline
from bulkred_dialect.compiler import lower_tile_module, parse
from bulkred_dialect.errors import PipelineError
from bulkred_dialect.pipeline import available_passes, build_passes, pipeline_passes

ROOT = Path(__file__).resolve().parents[1]
SPECS = (
    "lower-tile-reductions{target=sm_90a}",
    "lower-tile-reductions{target=sm_90a explain=false}",
    "lower-tile-reductions{target=sm_100a},lower-to-ptx",
    "bulkred-to-ptx{target=sm_100a explain=true}",
    "lower-tile-reductions,legalize-for-target,lower-bulk-ops,lower-to-ptx,check-target{target=sm_90a}",
    "canonicalize,cse",
)


@pytest.mark.parametrize("spec", SPECS)
def test_each_call_gets_new_passes_equal_to_a_fresh_build(spec):
    fresh = build_passes(spec, available_passes())
    first, second = pipeline_passes(spec), pipeline_passes(spec)
    assert first == fresh and second == fresh
    assert [type(p) for p in second] == [type(p) for p in fresh]
    assert all(a is not b for a, b in zip(first, second))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # an xDSL pass warns when it is built
def test_every_pass_built_with_its_defaults_is_reused_as_a_copy():
    """Each pass of ``available_passes`` that builds from its name alone is built once
    and copied (none holds state besides its options), equal to a fresh build."""
    built = 0
    for name in available_passes():
        try:
            fresh = build_passes(name, available_passes())
        except PipelineError:
            continue  # a pass with a required option
        assert pipeline_passes(name) == fresh, name
        built += 1
    assert built > 100


@pytest.mark.parametrize(
    "spec, message",
    [
        ("lower-tile-reductions{explain=maybe}", "'explain' of lower-tile-reductions must be true or false, got 'maybe'"),
        ("lower-to-ptz", "unknown pass 'lower-to-ptz'"),
        ("lower-tile-reductions{target=sm_90a target=sm_90a}", "is given twice"),
    ],
)
def test_a_bad_spec_raises_on_every_call(spec, message):
    for _ in range(2):
        with pytest.raises(PipelineError, match=message.replace("{", r"\{").replace("(", r"\(")):
            pipeline_passes(spec)


@dataclass(frozen=True)
class _CountingPass(ModulePass):
    """A pass holding state besides its options (a list it appends to)."""

    name = "test-memo-counting-pass"
    seen: list[int] = field(default_factory=list)

    def apply(self, ctx, op) -> None:
        self.seen.append(1)


def test_a_pass_with_state_is_built_again_each_call(monkeypatch):
    passes = {**available_passes(), _CountingPass.name: lambda: _CountingPass}
    monkeypatch.setattr(pipeline, "available_passes", lambda: passes)
    (a,) = pipeline_passes(_CountingPass.name)
    a.seen.append(1)
    (b,) = pipeline_passes(_CountingPass.name)
    assert b.seen == [] and b.seen is not a.seen


def test_lower_tile_module_with_the_same_spec_twice_gives_the_same_module():
    text = (ROOT / "examples" / "seed_sum32.mlir").read_text()
    spec = "lower-tile-reductions{target=sm_90a}"
    first, second = parse(text), parse(text)
    lower_tile_module(first, "sm_90a", pipeline=spec)
    lower_tile_module(second, "sm_90a", pipeline=spec)
    assert str(first) == str(second) != str(parse(text))
