"""benchmarks/foreach_dist.py without a GPU (issue 32's two-GPU run): its arguments, the
Llama-3-8B-shaped list and each rank's Shard(0) rows (against torch.chunk where torch is
installed), the dry run without torch, the report from given ranks' results (the verdict,
the ratio, the SM-count sentence), and the options tools/gpu.sh's bench step looks for."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("foreach_dist_bench", ROOT / "benchmarks" / "foreach_dist.py")
D = importlib.util.module_from_spec(spec)
sys.modules["foreach_dist_bench"] = D
spec.loader.exec_module(D)

LLAMA_3_8B_PARAMS = 8_030_261_248  # Meta's count for Llama-3-8B


def test_arguments(monkeypatch):
    monkeypatch.setenv("OUT", "/tmp/somewhere")
    a = D.parse([])
    assert (a.layers, a.steps, a.warmup, a.budget_s, a.out, a.bits_layers) == (32, 30, 3, 150.0, "/tmp/somewhere", 4)
    assert not a.dry_run and not a.cpu
    assert D.parse(["--scale", "0.25"]).layers == 8 and D.parse(["--scale", "0"]).layers == 0
    assert D.parse(["--scale", "0.25", "--layers", "3"]).layers == 3
    a = D.parse(["--budget-s", "120", "--out", "/tmp/x", "--steps", "20"])
    assert a.budget_s == 120 and a.out == "/tmp/x" and a.steps == 20
    assert D.parse(["--cpu", "--steps", "2"]).steps == 2  # the CPU check may take fewer
    for bad in (["--scale", "1.5"], ["--layers", "33"], ["--steps", "19"], ["--budget-s", "0"], ["--scale-rows", "0"],
                ["--bits-layers", "-1"]):
        with pytest.raises(SystemExit):
            D.parse(bad)


def test_the_llama_list_and_its_shards():
    shapes = D.llama_shapes()
    assert len(shapes) == 291 and shapes[0] == ("embed", (128256, 4096)) and shapes[-1] == ("lm_head", (128256, 4096))
    assert sum(math.prod(s) for _, s in shapes) == LLAMA_3_8B_PARAMS
    assert [s for _, s in shapes[1:10]] == [(4096, 4096), (1024, 4096), (1024, 4096), (4096, 4096), (14336, 4096),
                                            (14336, 4096), (4096, 14336), (4096,), (4096,)]
    assert len(D.llama_shapes(4)) == 39
    p = D.plan(D.parse(["--dry-run"]))
    assert p["full_bytes"] == 2 * LLAMA_3_8B_PARAMS and p["rank_bytes"] == [LLAMA_3_8B_PARAMS] * 2
    assert p["rank_shapes"][0][0] == (64128, 4096) and p["rank_shapes"][1][-2] == (2048,)
    # odd sizes: the first rank takes ceil(n / 2), as Shard(0)
    assert [D.shard_rows(n, 0) + D.shard_rows(n, 1) for n in (0, 1, 5)] == [(0, 0, 0, 0), (0, 1, 1, 1), (0, 3, 3, 5)]
    assert D.local_shape((7, 3), 1) == (3, 3) and D.llama_shapes(1, 1000)[1] == ("layers.0.q", (4, 4096))


def test_the_shards_are_torch_chunks():
    torch = pytest.importorskip("torch", reason="torch is not installed (CI): the rows of torch.chunk are not compared")
    for n in (0, 1, 2, 5, 4096, 128257):
        pieces = torch.arange(n).chunk(D.WORLD)
        for r in range(D.WORLD):
            start, stop = D.shard_rows(n, r)
            got = torch.arange(n)[start:stop]
            want = pieces[r] if r < len(pieces) else torch.arange(0)
            assert torch.equal(got, want), (n, r)


def test_the_dry_run_needs_no_torch(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # an import of torch would fail
    assert D.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "291 tensors, 16.06 GB" in out and "rank 0: 8.030 GB" in out and "rank 1: 8.030 GB" in out
    assert "embed                [128256, 4096] -> [64128, 4096] | [64128, 4096]" in out
    assert "same-bits list: 39 full tensors" in out


def _rank(r, whole, torch_whole, failures=()):
    c = {"total_float64": 3.0, "total_bulkred": 3.0000001, "total_torch_f32": 3.0000002, "total_torch_bf16": 3.0,
         "rel_bulkred_vs_float64": 3e-8, "rel_torch_f32_vs_float64": 7e-8, "rel_bulkred_vs_torch_f32": 3e-8,
         "rel_bulkred_vs_torch_bf16": 3e-8, "clip_max_rel_vs_torch_f32": 3e-3, "clip_max_rel_vs_torch_bf16": 7e-3,
         "clip_equal_bits_vs_torch_bf16": False, "torch_route": "clip_grad_norm_ (DTensor, Shard(0))"}
    times = {"clip every step": {"bulkred": {"local": 2.0, "all_reduce": 0.05, "root": 0.01, "scale": whole - 2.06,
                                             "whole": whole}, "torch": {"whole": torch_whole}, "steps": 30}}
    bits = {"grid": 528, "tensors": 39, "bytes": 3.85e9, "inputs_equal": True, "equal": True, "repeatable": True,
            "total": [1.5, 1.5], "total_bits": ["0x3fc00000"] * 2, "arch": "sm_90a", "list_grid": 528, "ctas_per_sm": 4,
            "target_sms": 132, "sm_counts_table": {"90": 132, "100": 148}}
    return {"rank": r, "env": {"gpu": "NVIDIA H200", "sm_count": 132, "torch": "2.11.0", "cuda": "13.0",
                               "nccl": "2.27.7", "NCCL_NVLS_ENABLE": "0"},
            "checks": c, "times": times, "bits": bits, "failures": list(failures), "skipped": []}


def test_the_report():
    p = D.plan(D.parse(["--dry-run"]))
    md = D.report_md(_rank(0, 6.0, 12.0), _rank(1, 6.2, 11.0), p)
    assert "| slower | 2.000 | 0.050 | 0.010 | 4.140 | 6.200 | 12.000 | **1.94x** |" in md
    assert "NVIDIA H200 (132 SMs)" in md and "NCCL 2.27.7" in md and "NCCL_NVLS_ENABLE=0" in md
    assert "8.03 GB read in 2.000 ms = 4015 GB/s, 84% of the HBM peak (4.80 TB/s)" in md
    assert "**equal** bits on the two GPUs" in md and "does NOT depend on the device's SM count" in md
    assert "132 x 4 = 528 CTAs for sm_90a" in md and md.rstrip().endswith("all checks passed")
    md = D.report_md(_rank(0, 6.0, 12.0), _rank(1, 6.2, 11.0, ["rel_bulkred_vs_float64 = 0.01 > 0.0001"]), p)
    assert md.rstrip().endswith("FAILED: rel_bulkred_vs_float64 = 0.01 > 0.0001")


def test_gpu_sh_passes_out_and_budget():
    """tools/gpu.sh's bench step adds --out and --budget-s to a benchmark whose file names
    them in double quotes (its ``takes``)."""
    text = (ROOT / "benchmarks" / "foreach_dist.py").read_text()
    assert '"--out"' in text and '"--budget-s"' in text
    assert "foreach_dist" in (ROOT / "tools" / "gpu.sh").read_text()


def test_the_report_summary_is_in_table_rows():
    """tools/gpu.sh's bench step prints only a log's table rows: the verdict and the bits are among them."""
    p = D.plan(D.parse(["--dry-run"]))
    rows = [x for x in D.report_md(_rank(0, 6.0, 12.0), _rank(1, 6.2, 11.0, ["x > y"]), p).splitlines() if x.startswith("|")]
    assert "| verdict | FAILED: x > y |" in rows and "| same bits on both GPUs | equal (inputs equal: True; total bits " \
        "['0x3fc00000', '0x3fc00000']) |" in rows
    assert "| clip every step: whole step, bulkred / torch | 6.200 / 12.000 ms (torch / bulkred 1.94x); local norm 4015 GB/s, " \
        "84% of the HBM peak |" in rows
    assert "| partition depends on the SM count | no: list_grid(sm_90a) = 132 x 4 = 528 CTAs, whatever the device's count |" in rows


def test_the_partition_follows_the_target_not_the_device():
    """The grid the report names, a function of the target only: sm_90a 132 x 4, sm_100a
    148 x 4 (tests/test_reduce_list.py ties the list kernels' launch to list_grid)."""
    p90, p100 = D.partition("sm_90a"), D.partition("sm_100a")
    assert (p90["list_grid"], p90["target_sms"], p90["ctas_per_sm"]) == (528, 132, 4)
    assert (p100["list_grid"], p100["target_sms"]) == (592, 148)
