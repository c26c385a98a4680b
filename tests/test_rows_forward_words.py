"""The per-element and per-row settings of the short and middle forward rows (rows_warp,
rows_cta; off by default, docs/rows.md): rows_common.AFFINE_HELD (the weight and bias
loaded once before the loop over rows, held in registers as loaded) and
rows_common.CTA_ONE_BARRIER (a CTA's reduction with one barrier, every thread combining
the warps' partials in warp 0's butterfly order). On the CPU interpreter, with the CTAs
narrowed as in test_rows (one CTA looping over the rows): each against float64, and
every output bit for bit the default kernel's (neither changes a value or an order)."""

from __future__ import annotations

import numpy as np
import pytest
import test_rows
from test_rows import small_ctas  # noqa: F401 - the CTAs narrowed (autouse)

import bulkred_dialect.passes.variants.rows_lower as rows_lower
from bulkred_dialect.passes.variants import rows_common, rows_cta


def _both(kind: str, n: int, dtype: str, variant: str, setting: str, monkeypatch, m: int = 5):
    """``test_rows.run`` of ``m`` rows with ``setting`` off, then on: (off's outputs, on's)."""
    x = np.random.default_rng(n).standard_normal((m, n)) * 3 + 1.5
    affine = dtype if kind in ("rms_norm", "layer_norm", "add_rms_norm") else None
    out = []
    for on in (False, True):
        monkeypatch.setattr(rows_common, setting, on)
        out.append(test_rows.run(kind, x, dtype, variant=variant, affine=affine))
    return out


def _same_bits(a, b) -> None:
    """y and every statistic of two ``test_rows.run`` results bit for bit."""
    assert a[0].tobytes() == b[0].tobytes()
    assert a[1].keys() == b[1].keys()
    for k in a[1]:
        assert a[1][k].tobytes() == b[1][k].tobytes(), k


HELD = [  # (kind, N, dtype, variant): a partial last vector where N / V is not a multiple of the group
    ("layer_norm", 200, "bfloat16", "rows_warp"),  # 50 vectors, 32 lanes: lanes 18 to 31 hold one
    ("rms_norm", 512, "float32", "rows_cta"),  # 2 warps, 2 vectors a thread
    ("add_rms_norm", 200, "float32", "rows_cta"),  # 50 vectors, 64 threads: a partial one
]


@pytest.mark.parametrize("kind,n,dtype,variant", HELD)
def test_affine_held_against_float64_and_the_defaults_bits(kind: str, n: int, dtype: str, variant: str,
                                                           monkeypatch) -> None:
    """AFFINE_HELD: y and the statistics within test_rows.check's tolerances of float64 and
    bit for bit the default's; the setting taken (rows_lower asked affine_held, True)."""
    seen = _spy(monkeypatch, "affine_held")
    off, on = _both(kind, n, dtype, variant, "AFFINE_HELD", monkeypatch)
    assert seen == [False, True]
    test_rows.check(kind, *on, dtype)
    _same_bits(off, on)


ONE_BARRIER = [  # rows_cta (one CTA of 64 threads, or 128 with 4 values a thread: rows_cta.VALUES); pipelined
    ("softmax", 512, "float32", 4, True),  # 4 warps; the (m, s) pairs' fma combination: lanes may differ
    ("log_softmax", 256, "bfloat16", None, True),  # 2 warps; FAST_EXP's symmetric combination
    ("layer_norm", 512, "float32", None, True),  # two reductions a row
    ("rms_norm", 512, "float32", 4, False),  # not pipelined: the row count alone carried
]


@pytest.mark.parametrize("kind,n,dtype,values,pipelined", ONE_BARRIER)
def test_one_barrier_against_float64_and_the_defaults_bits(kind: str, n: int, dtype: str, values: int | None,
                                                           pipelined: bool, monkeypatch) -> None:
    """CTA_ONE_BARRIER: 5 rows on one CTA (both sets of slots, each used twice or more),
    against float64 and bit for bit the default's; one ``bar.sync`` a reduction."""
    monkeypatch.setattr(rows_cta, "VALUES", values)
    monkeypatch.setattr(rows_common, "FORWARD_PIPELINE", pipelined)
    bars = []
    real = rows_lower.lower_rows

    def counted(op, rewriter, target, p):  # the bar.sync of the kernel, after its lowering
        kernel = op.parent_op()
        while kernel.name != "func.func":
            kernel = kernel.parent_op()
        real(op, rewriter, target, p)
        bars.append(sum(o.name == "ptx.bar.sync" for o in kernel.walk()))

    monkeypatch.setattr(rows_cta, "lower_rows", counted)
    off, on = _both(kind, n, dtype, "rows_cta", "CTA_ONE_BARRIER", monkeypatch)
    reductions = 2 if kind == "layer_norm" else 1
    assert bars == [2 * reductions, reductions]
    test_rows.check(kind, *on, dtype)
    _same_bits(off, on)


MAX_FIRST = [  # (kind, N, dtype, variant)
    ("softmax", 256, "bfloat16", "rows_warp"),
    ("log_softmax", 512, "float32", "rows_cta"),
]


@pytest.mark.parametrize("kind,n,dtype,variant", MAX_FIRST)
def test_max_first_against_float64(kind: str, n: int, dtype: str, variant: str, monkeypatch) -> None:
    """EXP_MAX_FIRST (the row's maximum reduced first, the exps against it): 5 rows within
    test_rows.check's tolerances of float64, the stored maximum the default's bit for bit
    (its sum not: another rounding); the setting taken."""
    seen = _spy(monkeypatch, "max_first")
    off, on = _both(kind, n, dtype, variant, "EXP_MAX_FIRST", monkeypatch)
    assert seen == [False, True]
    test_rows.check(kind, *on, dtype)
    assert off[1]["row_max"].tobytes() == on[1]["row_max"].tobytes()


def test_max_first_cross_entropy_against_float64(monkeypatch) -> None:
    """EXP_MAX_FIRST in cross_entropy with label smoothing on rows_cta (three reductions a
    row): the targets 3, N - 1, ignore_index and outside [0, N) against float64."""
    monkeypatch.setattr(rows_common, "EXP_MAX_FIRST", True)
    test_rows.run_cross_entropy(256, 0.1, variant="rows_cta")


def test_max_first_non_finite_rows_as_the_default(monkeypatch) -> None:
    """EXP_MAX_FIRST on rows_warp: an all -inf row, a row with a NaN and a row with +inf
    give NaN rows, a -inf element 0, as the default (and torch)."""
    monkeypatch.setattr(rows_common, "EXP_MAX_FIRST", True)
    n = 68
    x = np.random.default_rng(9).standard_normal((4, n))
    x[1] = -np.inf
    x[2, n // 2] = np.nan
    x[3, n - 2] = np.inf
    x[0, 3] = -np.inf
    y, stats, xv, _, _ = test_rows.run("softmax", x, variant="rows_warp")
    assert np.isnan(y[1:]).all()
    assert y[0, 3] == 0.0 and np.isfinite(y[0]).all()
    test_rows.check("softmax", y[[0]], {}, xv[[0]], None, None, "float32")


@pytest.mark.parametrize("kind,n,dtype,variant", [("add_rms_norm", 200, "bfloat16", "rows_warp"),
                                                  ("rms_norm", 512, "float32", "rows_cta")])
def test_rms_fma_against_float64(kind: str, n: int, dtype: str, variant: str, monkeypatch) -> None:
    """RMS_FMA (the squares summed by FFMA chains; a partial last vector at 200): y and rstd
    within test_rows.check's tolerances of float64; the setting taken; add_rms_norm's h
    (test_rows.run checks it against x + residual rounded) unchanged."""
    seen = _spy(monkeypatch, "rms_fma")
    off, on = _both(kind, n, dtype, variant, "RMS_FMA", monkeypatch)
    assert seen == [False, True]
    test_rows.check(kind, *on, dtype)


def _spy(monkeypatch, name: str) -> list:
    """rows_common's switch ``name`` (a function of the plan) wrapped so that each answer
    it gives is appended to the returned list (the setting asked, and taken)."""
    seen: list = []
    real = getattr(rows_common, name)
    monkeypatch.setattr(rows_common, name, lambda p: seen.append(real(p)) or seen[-1])
    return seen
