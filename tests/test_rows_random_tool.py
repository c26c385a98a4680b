"""tools/gpu_rows_random.py, the random differential of the row functions, without a GPU:
its drawing is deterministic per seed, covers every op and dtype, keeps to its size caps
and to the forms docs/rows.md supports; its comparison rule passes torch's own float32
result and a float32-accumulating stand-in rounded once (what the kernels promise) and
fails deliberately wrong results (scaled, a NaN where there is none, an inf). The
comparisons run on CPU torch (a CPU wheel is enough; skipped without torch)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import gpu_rows_random as R  # noqa: E402


def _torch():
    torch = pytest.importorskip("torch", reason="torch is not installed (a CPU wheel is enough for these tests)")
    R._load()
    return torch


def test_a_draw_is_a_function_of_seed_and_index():
    assert [R.draw(7, k) for k in range(50)] == [R.draw(7, k) for k in range(50)]
    assert [R.draw(7, k) for k in range(50)] != [R.draw(8, k) for k in range(50)]
    assert R.draw(7, 3) == R.draw(7, 3, R.CAP)


def test_200_draws_cover_every_op_and_dtype_within_the_caps():
    draws = [R.draw(11, k) for k in range(200)]
    assert {d["op"] for d in draws} == set(R.OPS)
    assert {d["dtype"] for d in draws} == set(R.DTYPES)
    assert {(d["op"], d["dtype"]) for d in draws} == {(o, t) for o in R.OPS for t in R.DTYPES}
    for d in draws:
        m, n = d["m"], d["n"]
        assert 1 <= m <= R.MAX_M and 1 <= n <= R.MAX_N and m * n <= R.CAP, d
        assert math.prod(d["shape"]) == m * n and 1 <= len(d["shape"]) <= 4, d
        assert math.prod(d["normalized"]) == n and d["shape"][-len(d["normalized"]):] == d["normalized"], d
        assert d["grads"] == (d["k"] % 2 == 1)
        if d["op"] == "cross_entropy":  # [M, C] or [C] logits only (docs/rows.md, "Refused")
            assert len(d["shape"]) in (1, 2) and 0.0 <= d["label_smoothing"] <= 1.0
            assert not (d["grads"] and d["ignored"] == 1.0)  # never every row ignored in a backward
        if d["normalized"] != [n]:  # several normalized dimensions: one contiguous block only
            assert d["op"] in ("rms_norm", "layer_norm") and not d["pad"] and not d["offset"]
        if d["grads"] and d["op"] in ("rms_norm", "layer_norm", "add_rms_norm"):
            assert not d["specials"]
        for key in ("weight", "bias"):
            assert d.get(key) in (None, d["dtype"], "float32")
        if d.get("weight") and d.get("bias"):
            assert d["weight"] == d["bias"]
        assert d.get("eps") is None or d["eps"] >= 0
    # the spread asked for: small and large M and N, odd N, padded and offset rows, specials, 3-D x
    assert min(d["m"] for d in draws) == 1 and max(d["m"] for d in draws) >= 4096
    assert min(d["n"] for d in draws) <= 2 and max(d["n"] for d in draws) >= 100_000
    assert max(d["m"] * d["n"] for d in draws) > 1 << 24
    assert sum(d["n"] % 2 for d in draws) >= 40 and sum(bool(d["pad"]) for d in draws) >= 40
    assert sum(bool(d["offset"]) for d in draws) >= 5 and sum(bool(d["specials"]) for d in draws) >= 30
    assert sum(len(d["shape"]) == 3 for d in draws) >= 10 and sum(d["grads"] for d in draws) == 100
    kinds = {s[0] for d in draws for s in d["specials"]}
    assert kinds == set(R.SPECIALS)
    ce = [d for d in draws if d["op"] == "cross_entropy"]
    assert {d["reduction"] for d in ce} == {"none", "sum", "mean"} and any(0 < d["label_smoothing"] < 1 for d in ce)
    assert any(d["ignored"] for d in ce) and any(d["ignore_index"] != -100 for d in ce)
    small = [R.draw(11, k, cap=4096) for k in range(200)]
    assert all(d["m"] * d["n"] <= 4096 for d in small)


def test_the_rule_passes_torchs_own_float32_and_fails_wrong_results():
    torch = _torch()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(8, 100, generator=g) * 3
    ref = torch.softmax(x.double(), -1)
    a = (ref * ref.log().abs()).nan_to_num(0, 0, 0)
    own = torch.softmax(x, -1)
    ok, worst, _, why = R.compare(own, ref, None, a, 100)
    assert ok and worst < 1, why
    ok, worst, _, why = R.compare(own * 1.01, ref, None, a, 100)
    assert not ok and worst > 1 and "eps-units > bound" in why
    bad = own.clone()
    bad[3, 5] = math.nan
    ok, _, _, why = R.compare(bad, ref, None, a, 100)
    assert not ok and why.startswith("NaN mismatch at (3, 5)")
    bad = own.clone()
    bad[2, 7] = math.inf
    ok, _, _, why = R.compare(bad, ref, None, a, 100)
    assert not ok and why.startswith("inf mismatch at (2, 7)")
    ok, _, _, why = R.compare(own.to(torch.bfloat16), ref, None, a, 100, want_dtype=torch.float32)
    assert not ok and "want torch.float32" in why
    # a 16-bit result: torch's own error (here its own bfloat16 softmax) sets the bound
    xb = x.to(torch.bfloat16)
    refb = torch.softmax(xb.double(), -1)
    ownb = torch.softmax(xb, -1)
    ok, _, vs, why = R.compare(ownb, refb, ownb, a, 100)
    assert ok and vs == 1.0, why
    ok, _, _, why = R.compare((ownb.float() * 1.05).to(torch.bfloat16), refb, ownb, a, 100)
    assert not ok, why
    # NaN and inf where the reference has them pass; the wrong sign of an inf does not
    x[1, 4] = math.nan
    x[2] = -math.inf
    ref = torch.log_softmax(x.double(), -1)
    a = x.double().abs().nan_to_num(0, 0, 0) + 10
    ok, _, _, why = R.compare(torch.log_softmax(x, -1), ref, None, a, 100)
    assert ok and ref[1].isnan().all() and ref[2].isnan().all(), why
    x[2] = 0
    x[2, 3] = -math.inf
    ref = torch.log_softmax(x.double(), -1)
    got = torch.log_softmax(x, -1)
    assert R.compare(got, ref, None, a, 100)[0]
    got[2, 3] = math.inf
    assert not R.compare(got, ref, None, a, 100)[0]


def _one_per_op_and_dtype(cap):
    """The first draw of each (op, dtype) of seed 5, without special values (so that a
    scaled result differs), every row counted (cross_entropy)."""
    found = {}
    for k in range(400):
        d = R.draw(5, k, cap)
        if (d["op"], d["dtype"]) not in found and d["n"] >= 2:
            d["specials"] = []
            d["scale"] = 1.0
            if d["op"] == "cross_entropy":
                d["ignored"] = 0.0
                d["label_smoothing"] = min(d["label_smoothing"], 0.5)
            found[d["op"], d["dtype"]] = d
    assert len(found) == len(R.OPS) * len(R.DTYPES)
    return found.values()


def test_a_float32_stand_in_rounded_once_passes_and_wrong_results_fail():
    """torch in float32 rounded once to the result's dtype (what the kernels promise) passes
    every op and dtype, forward and backward; the same scaled (1.01 for float32, 1.1 for
    the 16-bit types) or with a NaN in its first result fails."""
    _torch()
    for d in _one_per_op_and_dtype(cap=96):
        d["grads"] = True
        res = R.run_draw(d, R.TorchStandIn(d), "cpu", grads=True)
        assert res["status"] == "passed", (R.describe(d), res)
        names = {c[0] for c in res["checks"]}
        assert "y" in names and "dx" in names, names
        out = d.get("out_dtype") or d["dtype"]
        res = R.run_draw(d, R.TorchStandIn(d, scale=1.01 if out == "float32" else 1.1), "cpu", grads=False)
        assert res["status"] == "failed", (R.describe(d), res)
        res = R.run_draw(d, R.TorchStandIn(d, nan_at=0), "cpu", grads=False)
        assert res["status"] == "failed" and "NaN mismatch" in res["checks"][0][4], (R.describe(d), res)


def test_the_run_counts_and_reports(tmp_path, capsys):
    _torch()
    rc = R.main(["--stand-in", "--device", "cpu", "--seed", "3", "--count", "12", "--cap", "256", "--jobs", "1",
                 "--grads", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    report = json.loads((tmp_path / "rows_random.json").read_text())
    assert report["seed"] == 3 and report["ran"] == 12 and report["failures"] == []
    assert sum(v.get("passed", 0) for v in report["per_op"].values()) == 12
    assert "rows random: seed 3, 12 draws" in out and out.rstrip().endswith("seed 3")


def test_refusals_are_counted_by_message_with_numbers_as_hashes():
    a = R.refusal_key("bulkred.softmax: dim=0 is not the last dimension of a 2-D x: pass x.movedim(0, -1)")
    b = R.refusal_key("bulkred.softmax: dim=1 is not the last dimension of a 3-D x: pass x.movedim(1, -1)")
    assert a == b and "#" in a
    assert R.refusal_key("x's rows overlap (row stride 4 < row length 8)") == (
        "x's rows overlap (row stride # < row length #)")


def test_a_refusal_is_counted_not_failed():
    """A BulkredError of the function under test makes the draw "refused" with its message;
    any other exception fails it."""
    _torch()
    from bulkred_dialect.errors import BulkredError

    class Refusing(R.TorchStandIn):
        def softmax(self, x, dim=-1, dtype=None):
            raise BulkredError("bulkred.softmax: x's rows overlap (row stride 4 < row length 8)")

        def log_softmax(self, x, dim=-1, dtype=None):
            raise IndexError("not a refusal")

    d = next(d for d in (R.draw(5, k, 96) for k in range(100)) if d["op"] == "softmax")
    res = R.run_draw(d, Refusing(d), "cpu", grads=False)
    assert res["status"] == "refused" and res["refusal"].startswith("bulkred.softmax: x's rows overlap")
    d = next(d for d in (R.draw(5, k, 96) for k in range(100)) if d["op"] == "log_softmax")
    res = R.run_draw(d, Refusing(d), "cpu", grads=False)
    assert res["status"] == "failed" and res["checks"][0][4] == "IndexError: not a refusal"


def test_an_rms_norm_row_holding_an_infinity_may_take_either_of_torchs_patterns():
    """torch's CUDA rms_norm gives a row holding an infinity NaN throughout on some paths
    and NaN at the infinity (0 elsewhere) on others: either is taken in such a row, from
    bulkred; any other value there, or a NaN in a finite row, still fails."""
    torch = _torch()
    x = torch.ones(3, 4)
    x[1, 2] = float("inf")
    d, v = {"op": "rms_norm", "n": 4}, {"x": x}
    ref = torch.ones(3, 4, dtype=torch.float64)
    ref[1] = float("nan")  # torch's float64 kernel: the whole row
    own = ref.float()
    at_inf = torch.ones(3, 4)
    at_inf[1] = torch.tensor([0.0, -0.0, float("nan"), 0.0])
    for got in (at_inf, own.clone()):
        ok, *_ = R.compare(got, ref, R._inf_rows_as_either(d, v, got, own), 0.0, 4)
        assert ok
    wrong = at_inf.clone()
    wrong[1, 0] = 0.5  # a finite value in the infinity's row
    assert not R.compare(wrong, ref, R._inf_rows_as_either(d, v, wrong, own), 0.0, 4)[0]
    stray = at_inf.clone()
    stray[0, 1] = float("nan")  # a NaN in a finite row
    assert not R.compare(stray, ref, R._inf_rows_as_either(d, v, stray, own), 0.0, 4)[0]


def test_a_dx_carrying_float16_subnormals_gets_float16s_floor():
    """seed 311130 draw 363 on the H200: softmax of float32 x with dtype=float16, whose dx
    (float32) carries y's float16 rounding: one subnormal quantum of y off is within float16's
    floor when ``carried`` names it, and fails without (the float32 floor, 2^-126); 170
    quanta off fails either way."""
    torch = _torch()
    ref = torch.tensor([-1.6022694124312093e-08, 0.25], dtype=torch.float64)
    own = torch.tensor([-0.0, 0.25])
    got = torch.tensor([-5.960464477539063e-08, 0.25])
    assert R.compare(got, ref, own, 0.0, 5, own_counts=True, carried=torch.float16)[0]
    assert not R.compare(got, ref, own, 0.0, 5, own_counts=True)[0]
    far = torch.tensor([-1e-05, 0.25])  # 170 quanta
    assert not R.compare(far, ref, own, 0.0, 5, own_counts=True, carried=torch.float16)[0]


def test_softmaxs_dx_scale_carries_the_exponents_rounding():
    """seed 311130 draw 161: float32 softmax of N = 2 at scale 364, p of e^-63: dx's error
    scale has p (1 + |ln p|) (|dy| + sum |dy| p), as the forward's p |ln p|."""
    torch = _torch()
    d = {"op": "softmax", "m": 1, "n": 2, "dtype": "float32"}
    x = torch.tensor([[0.0, -63.0]], dtype=torch.float64)
    dy = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
    ((a, length),) = R.scales(d, {"x": x}, [torch.softmax(x, -1)], {"dy": [dy], "names": ["x"]})
    p = torch.softmax(x, -1)[0, 1].item()
    assert length == 2 and a[0, 1].item() >= p * 63.0


def test_a_16_bit_result_where_it_cancels_gets_float32s_share():
    """seed 311131 draw 307 on the H200: a bfloat16 layer_norm with a bias (N = 223,334)
    whose element of 6e-7 is the difference of terms of about 4 (a_i): 1.5e-6 off is a few
    float32 units of a_i, the share a float32 result has; 1e-3 off is not (a float32
    result would fail it too)."""
    torch = _torch()
    ref = torch.tensor([5.990779063033691e-07, 1.5], dtype=torch.float64)
    own = torch.tensor([5.811452865600586e-07, 1.5]).to(torch.bfloat16)
    a = torch.tensor([3.9, 3.9], dtype=torch.float64)
    got = torch.tensor([-8.717179298400879e-07, 1.5]).to(torch.bfloat16)
    assert R.compare(got, ref, own, a, 223334)[0]
    assert R.compare(got.float(), ref, None, a, 223334)[0]  # as a float32 result
    far = torch.tensor([1e-3, 1.5]).to(torch.bfloat16)
    assert not R.compare(far, ref, own, a, 223334)[0]
    assert not R.compare(far.float(), ref, None, a, 223334)[0]


def test_torchs_overflow_nan_is_not_wanted_where_the_reference_rounds_to_inf():
    """float16 cross_entropy's sum with label smoothing 1 (seed 311134, draw 56): the float64
    loss, 5e7, rounds to inf in float16; torch's own float16 kernel gives NaN (its nll sum
    overflows and is multiplied by 1 - s = 0). The infinity passes; a NaN there, a finite
    value or -inf fail, and torch's NaN where the reference is NaN is still wanted."""
    torch = _torch()
    ref = torch.tensor(5.0e7, dtype=torch.float64)
    own = torch.tensor(float("nan"), dtype=torch.float16)
    assert R.compare(torch.tensor(float("inf"), dtype=torch.float16), ref, own, 0.0, 4)[0]
    for bad in (float("nan"), 60000.0, -float("inf")):
        assert not R.compare(torch.tensor(bad, dtype=torch.float16), ref, own, 0.0, 4)[0], bad
    nan_ref = torch.tensor(float("nan"), dtype=torch.float64)
    assert R.compare(torch.tensor(float("nan"), dtype=torch.float16), nan_ref, own, 0.0, 4)[0]
    assert not R.compare(torch.tensor(float("inf"), dtype=torch.float16), nan_ref, own, 0.0, 4)[0]


def test_the_overflow_threshold_is_measured_as_a_finite_result():
    """float16 add_rms_norm's dx (seed 411201, draw 71): the float64 value 65521.3 rounds
    to inf in float16 (past 65520, the largest finite value and half its ulp), and a
    float32 computation a part in 10^5 below gives the largest finite value, 65504: within
    the error, passes; as does inf for a reference just short of the threshold. Far from
    it they still fail: 60000 for 65521.3, inf for 60000, and -65504 (the wrong sign)."""
    torch = _torch()
    f16 = torch.float16
    ref = torch.tensor([65521.28515520988], dtype=torch.float64)
    assert R.compare(torch.tensor([65504.0], dtype=f16), ref, None, 0.0, 49427)[0]
    assert R.compare(torch.tensor([float("inf")], dtype=f16), ref, None, 0.0, 49427)[0]
    assert R.compare(torch.tensor([float("inf")], dtype=f16), torch.tensor([65519.0], dtype=torch.float64), None, 0.0, 49427)[0]
    assert not R.compare(torch.tensor([60000.0], dtype=f16), ref, None, 0.0, 49427)[0]
    assert not R.compare(torch.tensor([-65504.0], dtype=f16), ref, None, 0.0, 49427)[0]
    assert not R.compare(torch.tensor([float("inf")], dtype=f16), torch.tensor([60000.0], dtype=torch.float64), None, 0.0, 49427)[0]
    assert not R.compare(torch.tensor([float("inf")], dtype=f16), torch.tensor([65000.0], dtype=torch.float64), None, 0.0, 4)[0]
