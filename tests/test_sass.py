"""What ptxas makes of our PTX, read from the SASS (nvdisasm from the pip package
nvidia-cuda-nvdisasm; no GPU, no CUDA toolkit).

For the seed demo (n = 32) on sm_100a the sm100_packed sum must be the packed adds of the
card -- 4*(32/8 - 1) + 3 = 15 ``FADD2`` -- with the local buffers in registers (no
``LDL``/``STL``); max/min must use the three-input ``FMNMX3``. The Hopper legalization
must have no packed or three-input instruction left.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bulkred_dialect.backend_ptx.printer import assemble_module
from bulkred_dialect.backend_ptx.sass import disassemble, opcode_counts
from bulkred_dialect.builder import context
from bulkred_dialect.diagnostics import parse_module
from bulkred_dialect.passes.bulkred_to_ptx import BulkredToPtxPass

SEED = (Path(__file__).resolve().parent.parent / "examples" / "seed_sum32.mlir").read_text()


def _sass(kind: str, pipeline_target: str, arch: str) -> dict[str, int]:
    module = parse_module(context(), SEED.replace("bulkred.reduce sum", f"bulkred.reduce {kind}"), "seed_sum32.mlir")
    BulkredToPtxPass(target=pipeline_target).apply(context(), module)
    counts = opcode_counts(disassemble(assemble_module(module, arch)))
    base: dict[str, int] = {}
    for op, n in counts.items():
        base[op.split(".")[0]] = base.get(op.split(".")[0], 0) + n
    return base


def test_sm100_packed_sum_is_fadd2_in_registers():
    ops = _sass("sum", "sm_100a", "sm_100a")
    assert ops.get("FADD2") == 15
    assert ops.get("FADD") == 1  # the final acc0 + acc1
    assert "LDL" not in ops and "STL" not in ops


@pytest.mark.parametrize("kind", ["max", "min"])
def test_sm100_packed_maxmin_uses_three_input_fmnmx(kind):
    ops = _sass(kind, "sm_100a", "sm_100a")
    # 13 three-input ops in the PTX for n = 32; ptxas may fuse scalar ones into more.
    assert ops.get("FMNMX3", 0) >= 13
    assert "LDL" not in ops and "STL" not in ops


def test_hopper_legalization_has_only_scalar_ops():
    ops = _sass("sum", "sm_90a", "sm_90a")
    assert "FADD2" not in ops
    assert ops.get("FADD") == 31  # the local variant: a sequential fold of 32 elements
    assert "LDL" not in ops and "STL" not in ops
