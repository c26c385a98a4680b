"""benchmarks/reductions_api.py without a GPU: the shapes of every case and size, the
table and the targets' summary from rows, a refused case's row, and the dry run."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("reductions_api", ROOT / "benchmarks" / "reductions_api.py")
B = importlib.util.module_from_spec(spec)
sys.modules["reductions_api"] = B  # dataclasses look their module up
spec.loader.exec_module(B)


def test_every_case_has_a_shape_of_its_size():
    for name, case in B.CASES.items():
        for size, nbytes in B.SIZES.items():
            shape = B.shape_of(case, nbytes)
            if shape is None:
                assert case.layout == "3d" and nbytes < 64 * 256 * 4
                continue
            assert math.prod(shape) * B.ITEMSIZE[case.dtype] == nbytes, (name, size, shape)
            if case.layout == "3d":
                assert shape[0] == 64 and shape[2] == 256
    assert B.shape_of(B.CASES["colsum"], 1 << 30) == (65536, 4096)
    assert {"sum", "amax", "rowsum", "colsum", "middle", "axes02", "t_sum0", "sum_f16", "sum_bf16", "sum_f64",
            "sum_i8", "any_bool"} <= set(B.CASES)


def _row(case, size, b, t, bc, tc, status="ok"):
    r = {"case": case, "size": size, "dtype": B.CASES[case].dtype, "bytes": B.SIZES[size], "shape": [1],
         "bulkred_graph_us": b, "torch_graph_us": t, "bulkred_call_us": bc, "torch_call_us": tc, "status": status}
    return B._finish(r, B.SIZES[size])


def test_table_and_targets():
    rows = [
        _row("sum", "1G", 350.0, 360.0, 360.0, 370.0),
        _row("colsum", "4K", 3.0, 2.5, 12.0, 11.0),
        _row("colsum", "1G", 400.0, 380.0, 410.0, 390.0),
        {"case": "sum_i8", "size": "4K", "dtype": "int8", "status": "unsupported: bulkred.sum: int8 is not supported yet",
         "torch_graph_us": 2.0, "torch_call_us": 9.0},
    ]
    md = B.table(rows, "H100")
    assert md.count("\n| ") == 1 + 1 + len(rows)  # header, rule, rows
    assert "unsupported: bulkred.sum: int8 is not supported yet" in md
    assert "| 1.03 |" in md  # 360 / 350
    t = B.targets(rows)
    assert "colsum@4K (graph 0.83x)" in t and "colsum@4K (call 0.92x)" in t and "colsum@1G (graph 0.95x)" in t
    assert "1 of 2 met; missed: colsum (2684)" in t
    assert "not timed (refused or failed): sum_i8@4K" in t
    assert rows[0]["bulkred_graph_gbps"] == pytest.approx((1 << 30) / 350.0 / 1e3)


def test_dry_run_and_bad_names(capsys):
    assert B.main(["--dry-run", "--quick"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == len(B.QUICK_SIZES) * len(B.CASES) and "65536, 4096" in out
    with pytest.raises(SystemExit):
        B.main(["--dry-run", "--cases", "nope"])


def test_permuted_view_cases():
    """The permuted views of issue 23, section 4: x.t().sum(1) of a [M, 1024] x (its
    column sum) at 64 MiB and 1 GiB, and a 3-D permute (the middle axis of x)."""
    t1, p3 = B.CASES["t_sum1"], B.CASES["p3_sum2"]
    assert t1.transpose and t1.axis == 1 and B.view_of(t1) == "transposed"
    assert B.shape_of(t1, B.SIZES["64M"]) == (16384, 1024) and B.shape_of(t1, B.SIZES["1G"]) == (262144, 1024)
    assert p3.perm == (0, 2, 1) and p3.axis == 2 and B.view_of(p3) == "permuted (0, 2, 1)"
    assert B.shape_of(p3, B.SIZES["1G"]) == (64, 16384, 256)


def test_the_functions_benchmark_lists_its_rows_without_a_gpu():
    """benchmarks/functions.py (the newer rows and the gradients against torch) loads and
    says how to run it without a GPU; every row names a function of the table."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, str(root / "benchmarks" / "functions.py"), "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--sizes" in r.stdout, r.stderr
    text = (root / "benchmarks" / "functions.py").read_text()
    for name in ("amax", "max_with_indices", "vector_norm", "logsumexp", "var"):
        assert f"b.{name}(" in text


def test_option_cases():
    """The cases with options (issue 29: an option must not double the cost): each calls
    a function of the table with options the row takes, and --options selects them."""
    import inspect

    import bulkred_dialect as bulkred

    assert set(B.OPTION_CASES) <= set(B.CASES)
    for name in B.OPTION_CASES:
        case = B.CASES[name]
        params = inspect.signature(getattr(bulkred, case.kind)).parameters
        assert all(k in params for k, _ in case.kw), name
        assert case.out == (name == "sum_out")
    assert dict(B.CASES["norm_inf"].kw) == {"ord": math.inf} and dict(B.CASES["std_mean1"].kw) == {"correction": 1}
    assert B.main(["--dry-run", "--options", "--sizes", "4K"]) == 0
