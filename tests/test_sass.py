"""What ptxas makes of our PTX, read from the SASS (nvdisasm from the pip package
nvidia-cuda-nvdisasm; no GPU, no CUDA toolkit).

For the seed demo (n = 32) on sm_100a the sm100_packed sum must be the packed adds of the
card -- 4*(32/8 - 1) + 3 = 15 ``FADD2`` -- with the local buffers in registers (no
``LDL``/``STL``); max/min must use the three-input ``FMNMX3``. The Hopper legalization
must have no packed or three-input instruction left.

A long reduction is a loop (issue 9): from n = 1024 to n = 16384 the lowered IR and the
PTX stay the same size, and the cubin stays small (it was 1.7 MB at n = 16384 unrolled).

The kernels whose SASS the tests read are assembled into one cubin per arch and
disassembled once (``_sass_counts``): nvdisasm takes a quarter of a second per run.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

from bulkred_dialect.backend_ptx.printer import assemble_module, print_ptx
from bulkred_dialect.backend_ptx.sass import disassemble, opcode_counts
from bulkred_dialect.builder import context
from bulkred_dialect.diagnostics import parse_module
from bulkred_dialect.passes.bulkred_to_ptx import BulkredToPtxPass
from bulkred_dialect.passes.legalize_for_target import LegalizeForTargetPass
from bulkred_dialect.passes.lower_tile_reductions import LowerTileReductionsPass
from bulkred_dialect.passes.lower_to_ptx import LowerToPtxPass

SEED = (Path(__file__).resolve().parent.parent / "examples" / "seed_sum32.mlir").read_text()


def _seed(kind: str, n: int = 32):
    name = f"{kind}_{n}"  # the kernel's name: one cubin holds the kernels of several tests
    text = SEED.replace("bulkred.reduce sum", f"bulkred.reduce {kind}").replace("memref<32xf32", f"memref<{n}xf32")
    return parse_module(context(), text.replace("@test_func", f"@{name}"), f"seed_{kind}{n}.mlir")


def _short(kind: str, target: str) -> ModuleOp:
    """The seed (n = 32) through ``bulkred-to-ptx`` for ``target``."""
    module = _seed(kind)
    BulkredToPtxPass(target=target).apply(context(), module)
    return module


# The kernels whose SASS the tests read, by the arch they are assembled for: (kind, n,
# lowering) with lowering "short" (_short) or a pipeline of LONG_PIPELINES (_long_lowered).
SASS_KERNELS = {
    "sm_100a": [("sum", 32, "short"), ("max", 32, "short"), ("min", 32, "short")]
    + [(k, n, "sm_100a") for k in ("sum", "max") for n in (1024, 16384)],
    "sm_90a": [("sum", 32, "short")] + [(k, n, "sm_90a") for k in ("sum", "max") for n in (1024, 16384)],
}


@cache
def _sass_counts(arch: str) -> dict[str, Counter[str]]:
    """Opcode counts per kernel (``sum_32`` ...) of every kernel of ``SASS_KERNELS[arch]``.
    Each is lowered in a module of its own; then all of them are moved into one module and
    assembled as one cubin for ``arch``, and that is disassembled once (nvdisasm takes
    about 0.25 s per run, however many kernels the cubin holds; ptxas compiles each
    ``.entry`` on its own, so a kernel's SASS is the one it has alone: the opcode counts of
    all twelve were the same). A kernel that does not lower or assemble fails the tests of
    every kernel of its arch, each with that kernel's error."""
    combined = ModuleOp([])
    for kind, n, lowering in SASS_KERNELS[arch]:
        module = _short(kind, arch) if lowering == "short" else _long_lowered(kind, n, lowering)[2]
        module = module.clone()
        for f in list(module.ops):
            f.detach()
            combined.body.block.add_op(f)
    sass = disassemble(assemble_module(combined, arch))
    # nvdisasm heads each section with `//------ .text.<kernel> ------`
    parts = re.split(r"(?m)^//-+ (\S+)\s+-+$", sass)
    out = {
        name.removeprefix(".text."): opcode_counts(body)
        for name, body in zip(parts[1::2], parts[2::2])
        if name.startswith(".text.")
    }
    assert sorted(out) == sorted(f"{k}_{n}" for k, n, _ in SASS_KERNELS[arch]), sorted(out)
    return out


def _sass(kind: str, arch: str) -> dict[str, int]:
    """SASS opcode counts, modifiers dropped, of the seed (n = 32) through ``bulkred-to-ptx``
    for ``arch``."""
    counts = _sass_counts(arch)[f"{kind}_32"]
    base: dict[str, int] = {}
    for op, n in counts.items():
        base[op.split(".")[0]] = base.get(op.split(".")[0], 0) + n
    return base


def test_sm100_packed_sum_is_fadd2_in_registers():
    ops = _sass("sum", "sm_100a")
    assert ops.get("FADD2") == 15
    assert ops.get("FADD") == 1  # the final acc0 + acc1
    assert "LDL" not in ops and "STL" not in ops


@pytest.mark.parametrize("kind", ["max", "min"])
def test_sm100_packed_maxmin_uses_three_input_fmnmx(kind):
    ops = _sass(kind, "sm_100a")
    # 13 three-input ops in the PTX for n = 32; ptxas may fuse scalar ones into more.
    assert ops.get("FMNMX3", 0) >= 13
    assert "LDL" not in ops and "STL" not in ops


def test_hopper_legalization_has_only_scalar_ops():
    ops = _sass("sum", "sm_90a")
    assert "FADD2" not in ops
    assert ops.get("FADD") == 31  # the local variant: a sequential fold of 32 elements
    assert "LDL" not in ops and "STL" not in ops


# sm_100a runs sm100_packed; sm_90a here runs the same lowering legalized (scalar ops).
LONG_PIPELINES = {
    "sm_100a": [LowerTileReductionsPass(target="sm_100a"), LowerToPtxPass(target="sm_100a")],
    "sm_90a": [
        LowerTileReductionsPass(target="sm_100a"),
        LegalizeForTargetPass(target="sm_90a"),
        LowerToPtxPass(target="sm_90a"),
    ],
}


@cache
def _long_lowered(kind: str, n: int, target: str) -> tuple[int, int, ModuleOp]:
    """(ops after lower-tile-reductions, ptx ops, the lowered module) of the seed program
    reducing n elements through ``LONG_PIPELINES[target]`` (not to be changed: cached)."""
    module = _seed(kind, n)
    first, *rest = LONG_PIPELINES[target]
    first.apply(context(), module)
    level2 = sum(1 for _ in module.walk())
    for p in rest:
        p.apply(context(), module)
    return level2, sum(1 for _ in module.walk()), module


def _long(kind: str, n: int, target: str) -> tuple[int, int, int, int]:
    """(ops after lower-tile-reductions, ptx ops, PTX lines, SASS instructions) of the
    seed program reducing n elements."""
    level2, ptx_ops, module = _long_lowered(kind, n, target)
    ptx = print_ptx(module, target)
    cubin = assemble_module(module, target)
    assert len(cubin) < 32 * 1024
    return level2, ptx_ops, ptx.count("\n"), sum(_sass_counts(target)[f"{kind}_{n}"].values())


@pytest.mark.parametrize("target", ["sm_100a", "sm_90a"])
@pytest.mark.parametrize("kind", ["sum", "max"])
def test_sm100_packed_code_does_not_grow_with_length(kind, target):
    short, long = _long(kind, 1024, target), _long(kind, 16384, target)
    # level 2 may differ by an index constant that one length shares with another (n = 1024:
    # the trip count 31 is also a chunk offset)
    assert abs(long[0] - short[0]) <= 1 and long[0] < 400, (short, long)
    assert long[1:3] == short[1:3], "the PTX of n = 16384 must be that of n = 1024"
    # the seed's copy loops may compile a little differently; the reduction does not grow
    assert long[3] <= short[3] + 32 and long[3] < 400
