"""rows_bulk's settings for the long rows (issue 30, section 4; each off by default until
an H200 measures it: ``tools/probes/rows_forward.py --set passes``): layer_norm's
statistics in one pass over shared memory (``Setting.one_pass``: the row's first element
or the thread's first value as the shift), softmax's maximum and sum in one pass
(``Setting.online``), the weight's and bias's slices staged in shared memory once
(``Setting.weight_shared``) and a persistent grid of at most so many units
(``Setting.max_units``); the per-element settings (``--set fastexp`` / ``--set affine``):
every exp as ex2.approx.ftz (``Setting.fast_exp``), softmax's sum in y's exponent
(``fold_sum``), the weight and bias in registers (``affine_registers``), bfloat16 read as
words (``words``), layer_norm's one pass with two scalar exchanges (``one_pass="local"``);
on the interpreter's clusters against numpy in float64.

Small settings keep the interpreter fast, as tests/test_rows_forward_bulk.py's: slices of
512 bytes in chunks of 128, CTAs of one warp, one cluster (or CTA) for every row."""

from __future__ import annotations

import numpy as np
import pytest
import test_rows
from test_rows import check, lowered, reference, run, run_cross_entropy
from test_rows_forward_bulk import small_bulk

from bulkred_dialect.interpreter.clusters import run_cluster_grid
from bulkred_dialect.ops.tile import kernel_launch
from bulkred_dialect.passes.variants import rows_bulk, rows_common
from bulkred_dialect.row_kernels import module


@pytest.fixture(autouse=True)
def small(monkeypatch):
    """Slices of 512 bytes in chunks of 128, CTAs of one warp, rows_bulk chosen for every
    N with the module's defaults; one cluster (or CTA) for all the rows."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 0)
    small_bulk(monkeypatch)
    monkeypatch.setattr(test_rows, "interpret", lambda m, *args: run_cluster_grid(m, "rows", *args))


def _rows(m: int, n: int, seed: int, mean: float = 5.0, spread: float = 3.0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((m, n)) * spread + mean


def _ln_error(stats: dict, xv: np.ndarray) -> float:
    """The largest relative error of the stored rstd against float64."""
    _, ref = reference("layer_norm", xv, eps=1e-5)
    return float(np.max(np.abs(stats["rstd"] / ref["rstd"] - 1)))


# float32 512 over slices of 512 bytes: 4 CTAs of one warp, one vector (4 values) a thread;
# bfloat16 1024: 4 CTAs, two vectors a thread (the thread's own shift over 8 values); both
# shifts on float32 in test_layer_norm_one_pass_large_mean
@pytest.mark.parametrize("one_pass,dtype,n", [("row", "float32", 512), ("thread", "bfloat16", 1024)])
def test_layer_norm_one_pass(monkeypatch, one_pass: str, dtype: str, n: int) -> None:
    """layer_norm's mean and variance from one pass (the sums of x - c and (x - c)^2) and
    one exchange: y, mean and rstd of 5 rows (both slot sets, both mbarrier phases)
    against float64, the weight and bias of x's type."""
    monkeypatch.setattr(rows_bulk, "ONE_PASS", one_pass)
    y, stats, xv, w, b = run("layer_norm", _rows(5, n, seed=21), dtype, affine=dtype, variant="rows_bulk")
    check("layer_norm", y, stats, xv, w, b, dtype)


def test_layer_norm_one_pass_large_mean(monkeypatch) -> None:
    """Rows of mean 1000 and spread 1 (float32): rstd within 4e-7 of float64 with either
    shift, as the two passes' (the shift's deviations are of the spread, not the mean);
    with the row's first element 40 spreads out (row 1), or 1000 in a row of mean 0 (row
    2, a massive first channel), the row's shift loses ``n (x0 - mean)^2 / var`` ulps of
    the variance (cancellation in ``S2 - S1^2 / n``) where the thread's shift (the mean of
    its own first values, the threads' sums combined by Chan's formula) keeps the
    default's error."""
    x = _rows(3, 512, seed=23, mean=1000.0, spread=1.0)
    x[1, 0] = 1040.0
    x[2] -= 1000.0  # (row 2: mean 0, its first element 1000: a massive first channel)
    x[2, 0] = 1000.0
    errs = {}
    for one_pass in (None, "row", "thread", "local"):
        monkeypatch.setattr(rows_bulk, "ONE_PASS", one_pass)
        y, stats, xv, w, b = run("layer_norm", x, "float32", affine="float32", variant="rows_bulk")
        ref, ref_stats = reference("layer_norm", xv, w, b, 1e-5)
        np.testing.assert_allclose(stats["mean"][0], ref_stats["mean"][0], rtol=1e-7)
        if one_pass != "row":
            np.testing.assert_allclose(stats["mean"], ref_stats["mean"], rtol=1e-7)
            # (y's x - mean: the float32 mean's rounding, half an ulp of 1000, times rstd and the weight)
            np.testing.assert_allclose(y, ref, rtol=0, atol=2 * 2.0**-14 * np.abs(w).max() + 1e-5)
        errs[one_pass] = [_ln_error({"rstd": stats["rstd"][[i]]}, xv[[i]]) for i in range(3)]
    assert errs["row"][0] < 4e-7, errs
    assert max(errs[None] + errs["thread"] + errs["local"]) < 4e-7, errs
    assert min(errs["row"][1:]) > 10 * max(errs["thread"][1:]), errs  # (the row shift's weakness, documented in Setting)


@pytest.mark.parametrize("kind,dtype,n,unroll", [("softmax", "float32", 512, 4), ("log_softmax", "bfloat16", 1024, 1)])
def test_online_softmax(monkeypatch, kind: str, dtype: str, n: int, unroll: int) -> None:
    """softmax's (m, s) in one pass, m raised once a step and the sum rescaled: y, max
    and sum of 5 rows against float64; UNROLL 1 (bfloat16, two vectors a thread): a loop
    of two steps, the second rescaling the first's sum."""
    monkeypatch.setattr(rows_bulk, "ONLINE", True)
    monkeypatch.setattr(rows_bulk, "UNROLL", unroll)
    x = _rows(5, n, seed=25)
    x[2] += np.linspace(0, 30, n)  # (a maximum that grows along the row: every step rescales)
    y, stats, xv, w, b = run(kind, x, dtype, variant="rows_bulk")
    check(kind, y, stats, xv, w, b, dtype)


def test_online_non_finite_rows(monkeypatch) -> None:
    """As the two passes (torch): an all -inf row, a row with a NaN and a row with +inf
    give NaN rows; a -inf element gives 0 and leaves its row finite (UNROLL 1: the
    infinities in steps of their own)."""
    monkeypatch.setattr(rows_bulk, "ONLINE", True)
    monkeypatch.setattr(rows_bulk, "UNROLL", 1)
    _non_finite_softmax_rows(seed=27)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_online_cross_entropy(monkeypatch, smoothing: float) -> None:
    """cross_entropy's loss and lse with the one-pass (m, s) (clusters of 4): a target
    inside, the last, ignore_index and one outside [0, N)."""
    monkeypatch.setattr(rows_bulk, "ONLINE", True)
    run_cross_entropy(512, smoothing, variant="rows_bulk")


@pytest.mark.parametrize("kind,dtype,affine,persistent", [("rms_norm", "bfloat16", "float32", False),
                                                          ("layer_norm", "float32", "float32", True),
                                                          ("layer_norm", "bfloat16", "bfloat16", False)])
def test_weight_shared_same_bits(monkeypatch, kind: str, dtype: str, affine: str, persistent: bool) -> None:
    """The weight's and bias's slices staged in shared memory once give the bits of the
    default (the same values, read from shared memory instead of global memory), a unit a
    row or a persistent grid of two slice buffers (5 rows of one cluster), and y against
    float64."""
    n = 512 if dtype == "float32" else 1024
    monkeypatch.setattr(rows_bulk, "PERSISTENT", persistent)
    x = _rows(5, n, seed=29)
    y0, s0, _, _, _ = run(kind, x, dtype, affine=affine, variant="rows_bulk")
    monkeypatch.setattr(rows_bulk, "WEIGHT_SHARED", True)
    built = module(kind, 5, n, dtype, weight=affine, bias=affine if kind == "layer_norm" else None, eps=1e-5,
                   variant="rows_bulk")
    text = str(lowered(built))
    assert "affine_loaded" in text  # (staged: the setting applies here)
    y, stats, xv, w, b = run(kind, x, dtype, affine=affine, variant="rows_bulk")
    assert np.array_equal(y, y0)
    assert all(np.array_equal(stats[k], s0[k]) for k in stats)
    check(kind, y, stats, xv, w, b, dtype)


def test_max_units_and_batch_invariance(monkeypatch) -> None:
    """A persistent grid capped at one unit (a cluster of 4 takes all 7 rows: every slot
    set and phase, two slice buffers) with every layer_norm setting on gives the launch's one cluster
    and the same bits for a row alone, as the 2nd of 3 and as the 4th of 7."""
    for name, value in (("PERSISTENT", True), ("MAX_UNITS", 1), ("ONE_PASS", "thread"), ("WEIGHT_SHARED", True)):
        monkeypatch.setattr(rows_bulk, name, value)
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 4)  # (the plan's grid then 7 units: the cap takes 1)
    built = lowered(module("layer_norm", 7, 1024, "bfloat16", weight="bfloat16", bias="bfloat16", eps=1e-5,
                           variant="rows_bulk"))
    launch = kernel_launch(next(o for o in built.walk() if o.name == "func.func"))
    assert launch.grid_dims[0] == 4 and launch.cluster_dims[0] == 4, launch
    x = _rows(7, 1024, seed=31)
    ys = [run("layer_norm", x[3:4], "bfloat16", affine="bfloat16", variant="rows_bulk")[0][0],
          run("layer_norm", x[2:5], "bfloat16", affine="bfloat16", variant="rows_bulk")[0][1]]
    y, stats, xv, w, b = run("layer_norm", x, "bfloat16", affine="bfloat16", variant="rows_bulk")
    assert all(np.array_equal(ys[0], v) for v in (*ys[1:], y[3]))
    check("layer_norm", y, stats, xv, w, b, "bfloat16")


@pytest.mark.parametrize("kind", ["softmax", "layer_norm"])
def test_wide_vectors_with_the_settings(monkeypatch, kind: str) -> None:
    """The probe's 16-byte bfloat16 vectors (rows_common.WIDE_BF16: 8 elements from 4
    words of shared memory, y stored as 4 words; Setting.words on) with the one-pass softmax, and with the
    one-pass layer_norm (the thread's shift) and its bfloat16 weight and bias staged in
    shared memory: 5 rows of 1024 over clusters of 4 against float64."""
    monkeypatch.setattr(rows_common, "WIDE_BF16", True)
    monkeypatch.setattr(rows_bulk, "WORDS", True)  # (the slice's and the staged weight's 16-byte vectors as words)
    monkeypatch.setattr(rows_bulk, "ONLINE", True)
    monkeypatch.setattr(rows_bulk, "ONE_PASS", "thread")
    monkeypatch.setattr(rows_bulk, "WEIGHT_SHARED", True)
    y, stats, xv, w, b = run(kind, _rows(5, 1024, seed=33), "bfloat16", affine="bfloat16" if kind == "layer_norm" else None,
                             variant="rows_bulk")
    check(kind, y, stats, xv, w, b, "bfloat16")


@pytest.mark.parametrize("dtype,persistent,weight_shared", [("bfloat16", False, False), ("float32", True, True)])
def test_add_rms_norm(monkeypatch, dtype: str, persistent: bool, weight_shared: bool) -> None:
    """add_rms_norm on rows_bulk (x's and the residual's slices copied on one mbarrier of
    two arrivals): residual_out is x + residual rounded to x's type (run checks it bit for
    bit), y and rstd against float64 from it; a unit a row (bfloat16, 4 CTAs of two
    vectors a thread), and a persistent grid of two slice buffers with the float32 weight
    staged in shared memory (float32, 4 CTAs)."""
    monkeypatch.setattr(rows_bulk, "PERSISTENT", persistent)
    monkeypatch.setattr(rows_bulk, "WEIGHT_SHARED", weight_shared)
    n = 1024 if dtype == "bfloat16" else 512
    built = lowered(module("add_rms_norm", 5, n, dtype, weight="float32", eps=1e-5, variant="rows_bulk"))
    assert "row_residual" in str(built)
    y, stats, xv, w, b = run("add_rms_norm", _rows(5, n, seed=35), dtype, affine="float32", variant="rows_bulk")
    check("add_rms_norm", y, stats, xv, w, b, dtype)


@pytest.mark.parametrize("kind", ["rms_norm", "layer_norm"])
def test_registers_with_the_staged_weight(monkeypatch, kind: str) -> None:
    """The probe's slice in registers (Setting.registers) in a persistent grid capped at
    one unit, the weight and bias staged in shared memory: the bits of the same kernel
    reading them from global memory, and y against float64 (5 rows of bfloat16 1024,
    clusters of 4, two vectors a thread)."""
    for name, value in (("PERSISTENT", True), ("MAX_UNITS", 1), ("REGISTERS", True)):
        monkeypatch.setattr(rows_bulk, name, value)
    x = _rows(5, 1024, seed=37)
    y0, s0, _, _, _ = run(kind, x, "bfloat16", affine="bfloat16", variant="rows_bulk")
    monkeypatch.setattr(rows_bulk, "WEIGHT_SHARED", True)
    built = lowered(module(kind, 5, 1024, "bfloat16", weight="bfloat16", bias="bfloat16" if kind == "layer_norm" else None,
                           eps=1e-5, variant="rows_bulk"))
    assert "affine_loaded" in str(built)
    y, stats, xv, w, b = run(kind, x, "bfloat16", affine="bfloat16", variant="rows_bulk")
    assert np.array_equal(y, y0) and all(np.array_equal(stats[k], s0[k]) for k in stats)
    check(kind, y, stats, xv, w, b, "bfloat16")


def _exps(built) -> tuple[int, int]:
    """(``ex2`` ops with ``.ftz``, without) in a lowered module."""
    ops = [o for o in built.walk() if o.name == "ptx.ex2"]
    ftz = sum(1 for o in ops if "ftz" in str(o))
    return ftz, len(ops) - ftz


@pytest.mark.parametrize("kind,dtype,online,fold", [("softmax", "bfloat16", False, True), ("softmax", "float32", True, False)])
def test_fast_exp(monkeypatch, kind: str, dtype: str, online: bool, fold: bool) -> None:
    """Setting.fast_exp (every exp of the passes and of the exchange as ex2.approx.ftz: no
    ex2 without .ftz left in the kernel) and softmax's Setting.fold_sum (y as
    ex2(fma(x - m, log2(e), -log2(sum)))): y and the statistics of 5 rows against float64,
    two passes or online (a maximum that grows along row 2: every step rescales)."""
    monkeypatch.setattr(rows_bulk, "FAST_EXP", True)
    monkeypatch.setattr(rows_bulk, "FOLD_SUM", fold)
    monkeypatch.setattr(rows_bulk, "ONLINE", online)
    n = 512 if dtype == "float32" else 1024
    ftz, plain = _exps(lowered(module(kind, 5, n, dtype, variant="rows_bulk")))
    assert ftz and not plain, (ftz, plain)
    x = _rows(5, n, seed=41)
    x[2] += np.linspace(0, 30, n)
    y, stats, xv, w, b = run(kind, x, dtype, variant="rows_bulk")
    check(kind, y, stats, xv, w, b, dtype)


def test_fast_exp_non_finite_rows(monkeypatch) -> None:
    """With fast_exp and fold_sum, as the default (torch): an all -inf row (its sum 0:
    ``-inf + inf``), a row with a NaN and a row with +inf give NaN rows; a -inf element
    gives 0 and leaves its row finite."""
    monkeypatch.setattr(rows_bulk, "FAST_EXP", True)
    monkeypatch.setattr(rows_bulk, "FOLD_SUM", True)
    _non_finite_softmax_rows(seed=43)


@pytest.mark.parametrize("kind,dtype,affine,registers", [("layer_norm", "bfloat16", "bfloat16", False),
                                                         ("rms_norm", "float32", "float32", False),
                                                         ("rms_norm", "bfloat16", "bfloat16", True)])
def test_affine_registers_and_words_same_bits(monkeypatch, kind: str, dtype: str, affine: str, registers: bool) -> None:
    """Setting.affine_registers (a persistent grid: the thread's weight and bias values
    loaded into registers once, before the rows loop; bfloat16 two to a word) and
    Setting.words (bfloat16 vectors read from shared memory as words) give the bits of the
    default (the same values, read elsewhere), for 4 rows in a grid capped at one unit
    (every row after the first reads the registers loaded before the loop; UNROLL 1: y's pass
    a loop by default, unrolled with the registers), and y against float64; with
    Setting.registers (``registers``: the weight's registers read as the slice's)."""
    monkeypatch.setattr(rows_bulk, "PERSISTENT", True)
    monkeypatch.setattr(rows_bulk, "MAX_UNITS", 1)
    monkeypatch.setattr(rows_bulk, "UNROLL", 1)
    monkeypatch.setattr(rows_bulk, "REGISTERS", registers)
    n = 512 if dtype == "float32" else 1024
    x = _rows(4, n, seed=45)
    y0, s0, _, _, _ = run(kind, x, dtype, affine=affine, variant="rows_bulk")
    held, widened = [], []
    real, packed = rows_bulk.held_affine, rows_bulk.packed_bf16
    monkeypatch.setattr(rows_bulk, "held_affine", lambda *a: held.append(a[3]) or real(*a))
    monkeypatch.setattr(rows_bulk, "packed_bf16", lambda *a: widened.append(packed(*a)) or widened[-1])  # (words' check)
    monkeypatch.setattr(rows_bulk, "AFFINE_REGISTERS", True)
    monkeypatch.setattr(rows_bulk, "WORDS", True)
    y, stats, xv, w, b = run(kind, x, dtype, affine=affine, variant="rows_bulk")
    assert len(held) == (2 if kind == "layer_norm" else 1), held  # (the settings applied)
    assert any(widened) == (dtype == "bfloat16"), widened
    assert np.array_equal(y, y0) and all(np.array_equal(stats[k], s0[k]) for k in stats)
    check(kind, y, stats, xv, w, b, dtype)


def test_layer_norm_local_shift_adversarial(monkeypatch) -> None:
    """one_pass "local" (the thread's shift, its own m2 moved to the row's mean after the
    sum's exchange: two scalar exchanges) with 16 values a thread and its shift the mean of
    its first vector (slices of 2 KiB: one CTA of one warp; UNROLL 1), on rows whose
    shifts are far from the thread's other values: mean 1000 and spread 1; a mean-0 row
    whose first element is 1000 (thread 0's shift 250, its m2 about 1e6); a row whose
    thread 0 has 1e4 in its first vector's four values and 0 in its others; a row of equal
    values (m2 0, rstd 1 / sqrt(eps)): mean and rstd within 4e-7 of float64 on every row,
    as the default's, and y against float64 (within the rounding of x - mean)."""
    monkeypatch.setattr(rows_bulk, "SLICE_BYTES", 2048)
    monkeypatch.setattr(rows_bulk, "UNROLL", 1)
    x = _rows(4, 512, seed=47, mean=1000.0, spread=1.0)
    x[1] -= 1000.0
    x[1, 0] = 1000.0
    x[2] = _rows(1, 512, seed=49, mean=0.0, spread=1.0)
    x[2, [0, 1, 2, 3]] = 1e4
    x[2, 4:64:4] = 0.0  # (thread 0's other values: vectors 32, 64, ... of the row hold its second to 16th)
    x[3] = 3.0
    for one_pass in (None, "local"):
        monkeypatch.setattr(rows_bulk, "ONE_PASS", one_pass)
        y, stats, xv, w, b = run("layer_norm", x, "float32", affine="float32", variant="rows_bulk")
        ref_y, ref = reference("layer_norm", xv, w, b, 1e-5)
        np.testing.assert_allclose(stats["mean"], ref["mean"], rtol=4e-7, atol=1e-30)
        np.testing.assert_allclose(stats["rstd"], ref["rstd"], rtol=4e-7)
        # (y's x - mean: the float32 mean's rounding, half an ulp of 1000 (or 1e4 / 8), times rstd and the weight)
        for i, ulps in enumerate((2, 2, 20, 0)):
            np.testing.assert_allclose(y[i], ref_y[i], rtol=0, atol=ulps * 2.0**-14 * np.abs(w).max() + 1e-5)


def test_affine_registers_of_a_bias_alone(monkeypatch) -> None:
    """layer_norm with a bias and no weight under Setting.affine_registers (the GPU suite's
    float32 262144 draw, 2026-11-29): the bias's registers alone unroll y's pass (it was
    left a loop, which the registers cannot be read in: an assertion while lowering)."""
    from bulkred_dialect.backend_ptx.runtime import compile_tile_module
    from bulkred_dialect.row_kernels import module

    monkeypatch.setattr(rows_bulk, "PERSISTENT", True)
    monkeypatch.setattr(rows_bulk, "UNROLL", 1)
    monkeypatch.setattr(rows_bulk, "AFFINE_REGISTERS", True)
    held = []
    real = rows_bulk.held_affine
    monkeypatch.setattr(rows_bulk, "held_affine", lambda *a: held.append(a[3]) or real(*a))
    ptx = compile_tile_module(module("layer_norm", None, 4096, "float32", bias="float32", eps=1e-5, variant="rows_bulk"), "sm_90a")
    assert held and "ld.global" in str(ptx)


def _non_finite_softmax_rows(seed: int) -> None:
    """bfloat16 softmax rows on rows_bulk as torch gives them: an all -inf row, a row with a
    NaN and a row with +inf give NaN rows; a -inf element gives 0 and leaves its row finite,
    which is checked against float64."""
    n = 1024
    x = _rows(4, n, seed=seed)
    x[1] = -np.inf
    x[2, n // 2] = np.nan
    x[3, n - 2] = np.inf
    x[0, 3] = -np.inf
    y, stats, xv, _, _ = run("softmax", x, "bfloat16", variant="rows_bulk")
    assert np.isnan(y[1:]).all()
    assert y[0, 3] == 0.0 and np.isfinite(y[0]).all()
    check("softmax", y[[0]], {k: v[[0]] for k, v in stats.items()}, xv[[0]], None, None, "bfloat16")
