"""benchmarks/rows.py without a GPU: the cells each part runs (the dry run, --quick), the
tables from measured cells (a column that could not run says why in a numbered note,
the ratios against copy and the best other column, skipped cells), the result checks,
and which of bulkred's functions a column calls."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("rows_bench", ROOT / "benchmarks" / "rows.py")
B = importlib.util.module_from_spec(spec)
sys.modules["rows_bench"] = B  # dataclasses look their module up
spec.loader.exec_module(B)


def test_the_cells_of_each_part(capsys):
    assert B.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    # forward 6 ops, backward 5, over 2 dtypes and 5 N; small 6 ops x 2 dtypes x 3 M; vocab 2 x 3
    assert "152 cells x 6 columns (copy, eager, compile, liger, quack, bulkred)" in out
    assert "fwd float32 N=262144 M=1024: GB moved per call: softmax 2.15, log_softmax 2.15" in out
    assert "add_rms_norm 4.29" in out and "bwd bfloat16 N=1024 M=262144: GB moved per call: softmax 1.61" in out
    assert "vocab float32 N=4097 M=65520: GB moved per call: cross_entropy 1.07" in out
    assert B.main(["--dry-run", "--quick", "--columns", "eager,bulkred"]) == 0
    out = capsys.readouterr().out
    assert "9 cells x 2 columns" in out and "float32" not in out
    with pytest.raises(SystemExit):
        B.main(["--dry-run", "--parts", "fwd,sideways"])
    assert "unknown part, column or op: sideways" in capsys.readouterr().err


def _cell(part, op, n, column, gbs=None, na=None, check=None, m=64, gpu_us=None):
    r = {"part": part, "op": op, "dtype": "bfloat16", "n": n, "m": m, "column": column}
    if na is not None:
        r["na"] = na
    else:
        r.update(gpu_us=gpu_us if gpu_us is not None else 1e3 / gbs, gbs=gbs, call_us=20.0, how="graph")
    if check is not None:
        r["check"] = check
    return r


def test_the_tables_say_why_a_column_is_missing_and_compare_bulkred():
    columns = ["copy", "eager", "liger", "bulkred"]
    liger = "import failed: ModuleNotFoundError: No module named 'liger_kernel'"
    records = [
        _cell("fwd", "softmax", 4096, "copy", 4000.0),
        _cell("fwd", "softmax", 4096, "eager", 2000.0),
        _cell("fwd", "softmax", 4096, "liger", na=liger),
        _cell("fwd", "softmax", 4096, "bulkred", 3000.0, check="ok"),
        _cell("fwd", "log_softmax", 4096, "copy", 4000.0),
        _cell("fwd", "log_softmax", 4096, "eager", 2500.0),
        _cell("fwd", "log_softmax", 4096, "liger", na=liger),
        _cell("fwd", "log_softmax", 4096, "bulkred", 1000.0, check="WRONG err=1.0e-01"),
        {"part": "fwd", "op": "softmax", "dtype": "bfloat16", "n": 65536, "m": 4096, "column": "*",
         "na": "skipped: past the budget of 10 s"},
        _cell("small", "softmax", 4096, "eager", gpu_us=3.0, m=1),
        _cell("small", "softmax", 4096, "bulkred", gpu_us=2.0, m=1),
    ]
    md = B.tables(records, columns, "GPU: test")
    lines = md.splitlines()
    assert "| softmax | bfloat16 | 4096 | 64 | 4,000 | 2,000 | n/a (1) | 3,000 | 0.75 | 1.50 |  | ok |" in lines
    assert "| log_softmax | bfloat16 | 4096 | 64 | 4,000 | 2,500 | n/a (1) | 1,000 | 0.25 | 0.40 |  | bulkred WRONG err=1.0e-01 |" in lines
    assert "| softmax | bfloat16 | 65536 | 4096 | (2) | (2) | (2) | (2) | (2) | (2) | | |" in lines
    assert f"(1) {liger}" in lines and "(2) skipped: past the budget of 10 s" in lines
    assert "| softmax | bfloat16 | 4096 | 64 | 20.0 | 20.0 | n/a (1) | 20.0 |" in lines  # per call
    small = next(i for i, line in enumerate(lines) if "Small batches" in line)
    assert "| softmax | bfloat16 | 4096 | 1 | n/a (3) | 3.0 | n/a (3) | 2.0 | 1.50 |" in "\n".join(lines[small:])
    assert "(3) not run" in lines


def test_a_column_checks_its_result_against_eager():
    torch = pytest.importorskip("torch", reason="torch is not installed (a CPU wheel is enough for this test)")
    g = torch.Generator().manual_seed(0)
    want = torch.randn(8, 64, generator=g)
    assert B.agree(torch, want * (1 + 1e-6), want, "softmax") == "ok"
    assert B.agree(torch, want + 1e-3, want, "softmax").startswith("WRONG err=")
    assert B.agree(torch, (want.bfloat16(), want), (want.bfloat16(), want), "add_rms_norm") == "ok"  # (y, h): y
    assert B.agree(torch, want[:4], want, "softmax") == "WRONG shape (4, 64) (torch (8, 64))"
    rows = torch.rand(8, generator=g) + 1.0
    assert B.agree(torch, rows, rows.mean(), "cross_entropy") == "ok"  # each row's loss: their mean
    assert B.agree(torch, rows, rows.mean() * 1.1, "cross_entropy").startswith("WRONG")


def test_which_function_a_column_calls():
    torch = pytest.importorskip("torch", reason="torch is not installed (a CPU wheel is enough for this test)")
    cols = B.Columns(torch, ["eager", "quack", "bulkred"])
    cols.bulkred = types.SimpleNamespace(softmax=lambda x, dim: ("bulkred.softmax", dim),
                                         rms_norm=lambda x, shape, w, eps: ("bulkred.rms_norm", shape, eps))
    cells = B.Inputs(torch, 2, 8, torch.float32)
    cells.made.update(x=torch.zeros(2, 8), w=torch.ones(8))  # no CUDA tensors made
    assert cols.forward("bulkred", "softmax", cells)() == ("bulkred.softmax", -1)
    assert cols.forward("bulkred", "rms_norm", cells)() == ("bulkred.rms_norm", (8,), B.EPS)
    with pytest.raises(B.NA, match="bulkred has no layer_norm"):
        cols.forward("bulkred", "layer_norm", cells)
    with pytest.raises(B.NA, match="not asked"):
        cols.forward("liger", "softmax", cells)
    if cols.quack is None:
        with pytest.raises(B.NA, match="import failed"):
            cols.forward("quack", "softmax", cells)
    else:
        with pytest.raises(B.NA, match="Quack has no log_softmax"):
            cols.forward("quack", "log_softmax", cells)
