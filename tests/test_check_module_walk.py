"""``check_module`` (the pass ``check-target`` and the PTX printer) reads the ops of a
module in ``module.walk()``'s order through ``diagnostics.walk_ops``: the version it
gives is the highest any ptx op needs, and its error names the first op, in that
order, that the target cannot run."""

from __future__ import annotations

from pathlib import Path

import pytest

from bulkred_dialect.compiler import lower_tile_module, parse
from bulkred_dialect.diagnostics import LocatedError
from bulkred_dialect.ops.ptx.base import PtxInstruction, check_module
from bulkred_dialect.ops.target import Target, TargetError, check_target

ROOT = Path(__file__).resolve().parents[1]
SM90, SM100 = Target.parse("sm_90a"), Target.parse("sm_100a")


@pytest.fixture(scope="module")
def sm100_module():
    """The seed demo lowered for sm_100a: its packed f32x2 adds are refused on sm_90a."""
    module = parse((ROOT / "examples" / "seed_sum32.mlir").read_text())
    lower_tile_module(module, SM100)
    return module


def test_version_is_the_highest_need_in_walk_order(sm100_module):
    ptx = [op for op in sm100_module.walk() if isinstance(op, PtxInstruction)]
    assert len(ptx) > 50
    assert check_module(sm100_module, SM100) == max([SM100.min_ptx, *(op.requirement().ptx for op in ptx)])


def test_the_error_names_the_first_refused_op_in_walk_order(sm100_module):
    refused = []
    for op in sm100_module.walk():
        if isinstance(op, PtxInstruction):
            try:
                check_target(op.ptx_mnemonic, op.requirement(), SM90)
            except TargetError:
                refused.append(op)
    assert len(refused) > 1  # else the order is not tested
    with pytest.raises(LocatedError) as e:
        check_module(sm100_module, SM90)
    assert e.value.op is refused[0]
