"""The warp, CTA and cluster variants (examples/scopes.py) on the CPU: each kernel
lowers through the variant the registry should pick, with the PTX instructions that
variant is made of, and assembles for sm_90a and sm_100a."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from bulkred_dialect.backend_ptx.assemble import assemble
from bulkred_dialect.backend_ptx.runtime import compile_tile_module
from bulkred_dialect.ops.tile import ReduceOp
from bulkred_dialect.passes.dispatch import explain

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import scopes  # noqa: E402

CHOSEN = {
    "sm_90a": {
        "warp_sum_i32": "warp_redux",
        "warp_max_f32": "warp_shuffle",
        "cta_sum_f32": "cta_shared",
        "cta_xor_i32": "cta_shared",
        "cluster_sum_i32": "cluster_red_async",
        "cluster_min_f32": "cluster_dsmem",
        "cluster_sum_bf16": "cluster_dsmem",
    },
}
CHOSEN["sm_100a"] = {**CHOSEN["sm_90a"], "warp_max_f32": "warp_redux_f32"}

# instructions each kernel's PTX must contain
INSTRUCTIONS = {
    "warp_sum_i32": [r"redux\.sync\.add\.s32"],
    "warp_max_f32": [r"shfl\.sync\.bfly\.b32", r"max\.NaN\.f32"],  # NaN propagates by default
    "cta_sum_f32": [r"shfl\.sync\.bfly\.b32", r"bar\.sync 0", r"st\.shared::cta\.f32"],
    "cta_xor_i32": [r"redux\.sync\.xor\.b32", r"bar\.sync 0"],
    "cluster_sum_i32": [
        r"red\.async\.relaxed\.cluster\.shared::cluster\.mbarrier::complete_tx::bytes\.add\.s32",
        r"mbarrier\.try_wait\.parity",
        r"mapa\.shared::cluster\.u32",
        r"barrier\.cluster\.arrive\.release",
    ],
    "cluster_min_f32": [r"mapa\.shared::cluster\.u32", r"ld\.shared::cluster\.f32", r"barrier\.cluster\.wait\.acquire"],
    "cluster_sum_bf16": [r"cvt\.f32\.bf16", r"cvt\.rn\.bf16\.f32", r"ld\.shared::cluster\.f32"],
}


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_dispatch_picks(target):
    module = scopes.scopes_module(target)
    for op in module.walk():
        if isinstance(op, ReduceOp):
            name = op.parent_op().sym_name.data
            assert explain(op, target).splitlines()[-1] == f"chosen: {CHOSEN[target][name]}", name


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_instructions_and_assembly(target):
    compiled = compile_tile_module(scopes.scopes_module(target), target)
    entries = re.split(r"\.visible \.entry ", compiled.ptx)[1:]
    by_name = {e.split("(", 1)[0]: e for e in entries}
    assert set(by_name) == set(scopes.KERNELS)
    for name, patterns in INSTRUCTIONS.items():
        if target == "sm_100a" and name == "warp_max_f32":
            patterns = [r"redux\.sync\.max\.NaN\.f32"]
        for p in patterns:
            assert re.search(p, by_name[name]), f"{name} on {target}: no {p}"
    assert len(assemble(compiled.ptx, target)) > 0


def test_warp_scope_needs_whole_warps():
    from bulkred_dialect import builder as T

    with T.kernel("odd", block=[48]) as k:
        x = k.param("x", [48], "float32")
        mine = T.alloc_buffer([1], "float32", scope="local")
        r = T.alloc_buffer([1], "float32", scope="local")
        T.copy(T.view(x, [T.thread_id("x")], [1]), mine)
        T.sum(r, mine, scope="warp")
    op = next(o for o in k.module().walk() if isinstance(o, ReduceOp))
    table = explain(op, "sm_90a")
    assert "block  FAIL  a multiple of 32 threads  48 threads" in re.sub(r" {2,}", "  ", table)
    assert table.splitlines()[-1] == "chosen: none"
