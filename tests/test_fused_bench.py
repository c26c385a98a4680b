"""benchmarks/fused.py without a GPU: its arguments, shapes, the checks against torch on
CPU tensors, one row end to end with fake timings and a fake bulkred, the table and the
summary from rows, the files it writes, and the dry run."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("fused_bench", ROOT / "benchmarks" / "fused.py")
F = importlib.util.module_from_spec(spec)
sys.modules["fused_bench"] = F  # dataclasses look their module up
spec.loader.exec_module(F)


def test_arguments():
    a, cases, forms, dtypes, sizes = F.parse([])
    assert cases == ["vector_norm_inf", "vector_norm_2", "var_mean", "argmax", "logsumexp"]
    assert forms == ["whole", "last", "first"] and dtypes == ["float32", "bfloat16"] and sizes == ["1M", "64M", "1G"]
    assert a.budget_s is None and a.repeat == 100
    a, cases, forms, dtypes, sizes = F.parse(["--quick", "--cases", "all", "--dtypes", "bfloat16", "--budget-s", "300",
                                              "--out", "/tmp/x", "--json", "/tmp/x.json"])
    assert sizes == list(F.QUICK_SIZES) and dtypes == ["bfloat16"] and "mean" in cases and "std" in cases
    assert a.budget_s == 300 and a.out == "/tmp/x" and a.json == "/tmp/x.json" and a.repeat == 40 and a.graph_calls == 30
    assert F.parse(["--sizes", "1G,1M", "--forms", "last"])[4] == ["1G", "1M"]
    for bad in (["--cases", "nope"], ["--forms", "middle"], ["--dtypes", "float16"], ["--sizes", "4K"]):
        with pytest.raises(SystemExit):
            F.parse(bad)


def test_shapes():
    for form in F.FORMS:
        for dtype in F.DTYPES:
            for size, nbytes in F.SIZES.items():
                shape = F.shape_of(form, dtype, nbytes)
                assert math.prod(shape) * F.ITEMSIZE[dtype] == nbytes, (form, dtype, size)
                assert len(shape) == (1 if form == "whole" else 2)
    assert F.shape_of("last", "float32", 1 << 30) == (65536, 4096)
    assert F.shape_of("first", "bfloat16", 1 << 20) == (128, 4096)
    assert F.copies_of(1 << 20) == 64 and F.copies_of(64 << 20) == 4 and F.copies_of(1 << 30) == 2


def _row(case, form, dtype, size, b, bc, torch_times, status="ok"):
    r = {"case": case, "form": form, "dtype": dtype, "size": size, "bytes": F.SIZES[size], "shape": [1],
         "bulkred_graph_us": b, "bulkred_call_us": bc, "status": status, "check": "ok err=1.0e-07 (torch 2.0e-07)",
         "torch": {label: {"graph_us": g, "call_us": c} for label, (g, c) in torch_times.items()}}
    return F.finish(r)


def test_fastest_torch_form_and_the_table():
    rows = [
        _row("vector_norm_inf", "whole", "float32", "1G", 350.0, 360.0,
             {F.ABSMAX: (700.0, 720.0), "linalg.vector_norm(x, inf)": (380.0, 365.0)}),
        _row("argmax", "last", "bfloat16", "1M", 10.0, 30.0, {"argmax(x)": (8.0, 33.0)}),
        {"case": "var_mean", "form": "first", "dtype": "float32", "size": "64M", "bytes": F.SIZES["64M"],
         "status": "unsupported: bulkred has no var_mean", "torch": {"var_mean(x, correction=1)": {"graph_us": 40.0}}},
        {"case": "logsumexp", "form": "whole", "dtype": "float32", "size": "1M",
         "status": "WRONG err=3.0e-02 > 1e-05 (torch err=1.0e-07)"},
        {"case": "logsumexp", "form": "whole", "dtype": "float32", "size": "1G", "status": "skipped: past the time budget of 300 s"},
    ]
    rows[2] = F.finish(rows[2])
    r0 = rows[0]
    assert r0["torch_graph_form"] == "linalg.vector_norm(x, inf)" and r0["torch_graph_us"] == 380.0
    assert r0["ratio_graph"] == pytest.approx(380 / 350) and r0["ratio_call"] == pytest.approx(365 / 360)
    assert r0["ratio_base_graph"] == pytest.approx(2.0) and r0["ratio_base_call"] == pytest.approx(2.0)
    assert r0["bulkred_graph_gbps"] == pytest.approx((1 << 30) / 350.0 / 1e3)
    assert r0["torch"][F.ABSMAX]["graph_gbps"] == pytest.approx((1 << 30) / 700.0 / 1e3)
    assert "ratio_base_graph" not in rows[1] and rows[1]["ratio_graph"] == pytest.approx(0.8)

    md = F.table(F.sort_rows(rows), "H100")
    assert md.count("\n| ") == 2 + len(rows)  # header, rule, rows
    assert "| 1.09 |" in md and "| 2.00 / 2.00 |" in md and "380.0 (linalg.vector_norm(x, inf))" in md
    assert "unsupported: bulkred has no var_mean" in md and "WRONG err=3.0e-02" in md
    # the sort: the case order of CASES, then form, dtype, size
    assert [r["case"] for r in F.sort_rows(rows)] == ["vector_norm_inf", "var_mean", "argmax", "logsumexp", "logsumexp"]

    s = F.summary(rows)
    assert "GPU time: 2 rows timed; below: argmax/last/bfloat16@1M (0.80x)" in s
    assert "per call: 2 rows timed; below: none" in s
    assert "vector_norm_inf/whole/float32@1G 2.00x" in s and "vector_norm_inf/whole/float32@1G 3068" in s
    assert "unsupported: 1: var_mean/first/float32@64M" in s and "wrong results (not timed): 1: logsumexp" in s
    assert "skipped (time budget or stop): 1" in s
    t = F.torch_table(rows)
    assert t.count("\n") == 1 + 2 + 1 + 1  # rule, two forms, one, one
    assert "`x.abs().amax()` | 700.0 |" in t


def test_write(tmp_path):
    rows = [_row("argmax", "last", "float32", "1M", 10.0, 30.0, {"argmax(x)": (12.0, 33.0)})]
    a, *_ = F.parse(["--out", str(tmp_path / "o"), "--json", str(tmp_path / "j" / "f.json")])
    note = F.write(rows, a, "H100")
    assert (tmp_path / "o" / "fused.md").read_text().startswith("GPU: H100")
    assert json.loads((tmp_path / "j" / "f.json").read_text())["rows"][0]["ratio_graph"] == pytest.approx(1.2)
    assert json.loads((tmp_path / "o" / "fused.json").read_text())["gpu"] == "H100"
    assert note.startswith(("plot: ", "plot skipped"))


def test_dry_run_and_bad_names(capsys):
    assert F.main(["--dry-run", "--quick"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == len(F.QUICK_SIZES) * len(F.DEFAULT_CASES) * len(F.FORMS) * len(F.DTYPES)
    assert "(65536, 4096)" in out and "x.abs().amax(); linalg.vector_norm(x, inf)" in out
    with pytest.raises(SystemExit):
        F.main(["--dry-run", "--cases", "nope"])


# The checks and one row on CPU tensors: a fake bulkred made of torch calls.

try:
    import torch
except ImportError:  # the tests above run without torch; these need its CPU build
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def _fake_bulkred(wrong: str = "", missing: tuple = ()):
    def axis_kw(axis):
        return {} if axis is None else {"dim": axis}

    def vector_norm(x, ord=2, axis=None, keepdims=False):
        return torch.linalg.vector_norm(x, ord, **axis_kw(axis))

    def var_mean(x, axis=None, correction=0):
        v, m = torch.var_mean(x.float(), **axis_kw(axis), correction=correction)
        return v.to(x.dtype), m.to(x.dtype)

    def argmax(x, axis=None):
        i = torch.argmax(x, **axis_kw(axis))
        return i + 1 if wrong == "argmax" else i

    def logsumexp(x, axis=None):
        r = torch.logsumexp(x, 0 if axis is None else axis)
        return r * 1.1 if wrong == "logsumexp" else r

    class ReductionError(ValueError):
        pass

    def mean(x, axis=None):
        raise ReductionError("bulkred.mean: the first axis of bfloat16 is not supported yet\nmore text")

    m = types.SimpleNamespace(vector_norm=vector_norm, var_mean=var_mean, argmax=argmax, logsumexp=logsumexp, mean=mean,
                              ReductionError=ReductionError)
    for name in missing:
        delattr(m, name)
    return m


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("form", list(F.FORMS))
def test_checks_pass_on_right_results(form, dtype):
    torch.manual_seed(0)
    x = torch.randn(F.shape_of(form, dtype, 1 << 16), dtype=getattr(torch, dtype))
    b = _fake_bulkred()
    for name in F.DEFAULT_CASES:
        case = F.CASES[name]
        passed, text = F.check(torch, case, form, F.bulkred_fn(b, case, form)(x), x)
        assert passed and text.startswith("ok"), (name, form, dtype, text)


@needs_torch
def test_checks_catch_wrong_results():
    torch.manual_seed(1)
    x = torch.randn(16, 4096)
    b = _fake_bulkred(wrong="argmax")
    passed, text = F.check(torch, F.CASES["argmax"], "last", b.argmax(x, axis=-1), x)
    assert not passed and "16 of 16 indices differ (not at the max)" in text
    # a tie resolved by another than the first maximum
    y = torch.zeros(4, 8)
    y[:, 2] = y[:, 5] = 1.0
    passed, text = F.check(torch, F.CASES["argmax"], "last", torch.full((4,), 5), y)
    assert not passed and "a tie" in text
    passed, text = F.check(torch, F.CASES["logsumexp"], "first", _fake_bulkred(wrong="logsumexp").logsumexp(x, 0), x)
    assert not passed and text.startswith("WRONG err=")
    passed, text = F.check(torch, F.CASES["vector_norm_inf"], "whole", x.abs().amax() * (1 + 1e-6), x)
    assert not passed and "not equal" in text
    passed, text = F.check(torch, F.CASES["var_mean"], "last", x.var(-1), x)
    assert not passed and "1 results (torch 2)" in text
    passed, text = F.check(torch, F.CASES["vector_norm_2"], "last", torch.linalg.vector_norm(x), x)
    assert not passed and "WRONG shape" in text
    # a float32 result of a bfloat16 input is right, with a note
    xb = x.bfloat16()
    passed, text = F.check(torch, F.CASES["vector_norm_inf"], "last", xb.float().abs().amax(-1), xb)
    assert passed and "dtype float32 (torch bfloat16)" in text


@needs_torch
def test_rows_end_to_end_with_fake_timings(monkeypatch):
    """bench_one as on the GPU, but on CPU tensors with fixed timings: an ok row, a wrong
    one (no bulkred timing), a missing function and a refusal (torch timed anyway)."""
    monkeypatch.setattr(F, "make_inputs", lambda t, shape, dtype, copies: [torch.randn(shape, dtype=getattr(t, dtype))
                                                                          for _ in range(2)])
    monkeypatch.setattr(F.RA, "graph_us", lambda t, fn, inputs, calls, replays: (fn(inputs[0]), 5.0)[1])
    monkeypatch.setattr(F.RA, "call_us", lambda t, fn, inputs, repeat: (fn(inputs[1]), 9.0)[1])
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    a, *_ = F.parse(["--quick"])
    b = _fake_bulkred(wrong="logsumexp", missing=("var_mean",))
    r = F.bench_one(torch, b, F.CASES["vector_norm_inf"], "first", "float32", "1M", a)
    assert r["status"] == "ok" and r["check"].startswith("ok") and r["ratio_graph"] == 1.0 and r["ratio_base_call"] == 1.0
    assert set(r["torch"]) == {F.ABSMAX, "linalg.vector_norm(x, inf)"} and r["bulkred_graph_gbps"] > 0
    r = F.bench_one(torch, b, F.CASES["logsumexp"], "whole", "bfloat16", "1M", a)
    assert r["status"].startswith("WRONG") and "bulkred_graph_us" not in r and r["torch_graph_us"] == 5.0
    r = F.bench_one(torch, b, F.CASES["var_mean"], "last", "float32", "1M", a)
    assert r["status"] == "unsupported: bulkred has no var_mean" and r["torch_call_us"] == 9.0
    r = F.bench_one(torch, b, F.CASES["mean"], "first", "bfloat16", "1M", a)
    assert r["status"] == "unsupported: bulkred.mean: the first axis of bfloat16 is not supported yet"
    r = F.bench_one(torch, b, F.CASES["std"], "first", "bfloat16", "1M", a)
    assert r["status"] == "unsupported: bulkred has no std"
    md = F.table([r], "cpu")
    assert "unsupported: bulkred has no std" in md
