"""cross_entropy's backward settings (rows_backward.CE_FAST, CE_TARGET_APART; on where their
tables say, docs/rows.md): on the CPU interpreter, with the CTAs narrowed as in test_rows,
each against float64 (dx = ``(exp(x - lse) - s / N - (1 - s) [j == t]) * grad[row]``; 0 on
an ignored row, NaN where the target is outside [0, N) or the row's lse is NaN), the
default too, and CE_TARGET_APART bit for bit CE_FAST's."""

from __future__ import annotations

import numpy as np
import pytest
import test_rows
from test_rows import small_ctas  # noqa: F401 - the CTAs narrowed (autouse)

from bulkred_dialect.passes.variants import rows_backward
from bulkred_dialect.row_kernels import module

IGNORED = -7


SWITCHES = ("CE_FAST", "CE_TARGET_APART")


def _dx(n: int, dtype: str, variant: str, settings: dict, monkeypatch, smoothing: float = 0.1):
    """dx of 5 rows (targets: in the row's middle, ignored, the last element, outside [0, N),
    ignored with a NaN lse) under ``settings`` (rows_backward's constants), with the inputs'
    values as the kernel saw them; and the lowered module's text (printed where read)."""
    for k in SWITCHES:
        monkeypatch.setattr(rows_backward, k, settings.get(k, False))
    m = 5
    rng = np.random.default_rng(n)
    x = rng.standard_normal((m, n)) * 3
    xbits = test_rows.to_bits(x, dtype)
    xv = test_rows.values(xbits, dtype)
    mx = xv.max(1)
    lse = (mx + np.log(np.exp(xv - mx[:, None]).sum(1))).astype(np.float32)
    lse[4] = np.nan
    target = np.array([n // 2 + 1, IGNORED, n - 1, n + 5, IGNORED], np.int64)
    dl = rng.standard_normal(m).astype(np.float32)
    built = test_rows.lowered(module("cross_entropy_backward", None, n, dtype, variant=variant, ignore_index=IGNORED,
                                     label_smoothing=smoothing or None))
    _, dx, _, _, _ = test_rows.interpret(built, xbits, test_rows.to_bits(np.full((m, n), 7.0), dtype), target, dl, lse)
    return dx, xv, lse, target, dl, test_rows.ModuleText(built)


def _check(dx, xv, lse, target, dl, n: int, dtype: str, smoothing: float = 0.1) -> None:
    """dx against float64: the kept rows 0 and 2 within the output's rounding, the ignored
    row 1 +0, rows 3 (target outside) and 4 (ignored, lse NaN: torch's ``0 - p * 0``) NaN."""
    got = test_rows.values(dx, dtype)
    want = np.exp(xv - lse.astype(np.float64)[:, None]) - smoothing / n
    for i in (0, 2):
        want[i, target[i]] -= 1 - smoothing
    want *= dl.astype(np.float64)[:, None]
    tol = {"float32": 4e-6, "float16": 1e-3, "bfloat16": 8e-3}[dtype] * max(1.0, np.abs(want[[0, 2]]).max())
    np.testing.assert_allclose(got[[0, 2]], want[[0, 2]], rtol=0, atol=tol)
    assert (got[1] == 0).all() and not np.signbit(got[1]).any()
    assert np.isnan(got[[3, 4]]).all()


FAST = {"CE_FAST": True}
APART = {"CE_FAST": True, "CE_TARGET_APART": True}
CASES = [  # (N, dtype, variant, label smoothing): a partial last vector where N / V is not a multiple of the group
    (200, "bfloat16", "rows_warp", 0.1),  # 50 vectors, 32 lanes: lanes 18 to 31 hold a second one
    (200, "float16", "rows_warp", 0.0),
    (516, "float32", "rows_cta", 0.1),  # 129 vectors, 64 threads: thread 0 holds a third
    (4 * (2 * 32 + 11) + 4, "float32", "rows_stream", 0.0),  # a loop step of 2 vectors of 32 threads, 12 more, a partial
    (132, "float32", "rows_cluster", 0.1),  # a cluster of 2 CTAs of one warp: each CTA's slice, the target in rank 1's
]


@pytest.mark.parametrize("n,dtype,variant,smoothing", CASES)
def test_fast_and_target_apart_against_float64(n: int, dtype: str, variant: str, smoothing: float, monkeypatch) -> None:
    """CE_FAST (ex2.approx.ftz, fma(p, s, c)) within float64's tolerance, its non-finite and
    ignored rows the default's; CE_TARGET_APART's dx bit for bit CE_FAST's (the target's
    element written again by its thread: rows 0 and 2 hold the target elsewhere than the
    thread's first vector)."""
    fast = _dx(n, dtype, variant, FAST, monkeypatch, smoothing)
    apart = _dx(n, dtype, variant, APART, monkeypatch, smoothing)
    assert "ex2" in fast[5] and "ftz" in fast[5] and "ftz" in apart[5]
    _check(*fast[:5], n, dtype, smoothing)
    _check(*apart[:5], n, dtype, smoothing)
    assert fast[0].tobytes() == apart[0].tobytes()


def test_default_against_float64(monkeypatch) -> None:
    """Both switches off: the accurate exp (no ``ftz``), within float64's tolerance
    (rows_cta, a partial last vector)."""
    n = 260  # 65 vectors of 4, 64 threads
    off = _dx(n, "bfloat16", "rows_cta", {}, monkeypatch)
    assert "ftz" not in off[5]
    _check(*off[:5], n, "bfloat16")


def test_measured_cells() -> None:
    """The switches None: the tables decide, by type and N (never M), the cells an H200
    measured faster (tools/probes/rows_backward.py --set ce): CE_FAST for bfloat16 (and
    float16, its twin) 1024 to 16384 and float32 65536, CE_TARGET_APART with it at float32
    65536; float32 65536 is rows_stream's (rows_cluster's
    before), 16384 still rows_cta's."""
    from types import SimpleNamespace

    from bulkred_dialect.ops.target import Target
    from bulkred_dialect.ops.tile.rows import NormKind
    from bulkred_dialect.passes.lower_tile_reductions import explanations
    from bulkred_dialect.passes.variants.rows_common import BF16, F16, F32

    for k in SWITCHES:
        assert getattr(rows_backward, k) is None

    def on(dtype, n: int) -> tuple[bool, bool]:
        p = SimpleNamespace(dtype=dtype, n=n, kind=NormKind.CROSS_ENTROPY_BACKWARD, group=256)
        return rows_backward.ce_fast(p), rows_backward.ce_target_apart(p)

    for n in (1024, 4096, 16384):
        assert on(BF16, n) == on(F16, n) == (True, False)
        assert on(F32, n) == (False, False)
    assert on(BF16, 65536) == on(BF16, 262144) == on(F32, 262144) == (False, False)
    assert on(F32, 65536) == (True, True)

    def chosen(n: int) -> str:
        (table,) = explanations(module("cross_entropy_backward", None, n, "float32", ignore_index=IGNORED),
                                Target.parse("sm_90a"))
        return next(line for line in table.splitlines() if line.startswith("chosen"))[len("chosen: "):]

    assert chosen(65536) == "rows_stream"
    assert chosen(16384) == "rows_cta"
