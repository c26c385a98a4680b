"""log_softmax bfloat16's candidate settings (issue 30, section 4; each off by default until
an H200 measures it: ``tools/probes/rows_forward.py --set logsoftmax``), on the CPU
interpreter at small shapes against float64 (tests/test_rows.check's bounds):

* rows_common.LOG_SOFTMAX_LSE: y as ``x - lse`` (``lse = max + log(sum)`` once a row, one
  FADD an element) instead of ``(x - max) - log(sum)``, on every variant that writes y;
* softmax bfloat16's and cross_entropy bfloat16's rows_bulk settings (fast exp, words, the
  slice in registers, a unit a row with its first copy early, online statistics) with it;
* the table entries the probe's verdicts name (LOG_SOFTMAX_LSE_MEASURED's, rows_cta's
  MIN_CTAS_MEASURED's: ``.minnctapersm``, no value changes);

each batch-invariant (a row's bits the same alone as in the batch), the non-finite rows as
the default's, and the default dispatch untouched (the setting's table empty)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import test_rows
from test_rows import check, run
from test_rows import small_ctas  # noqa: F401 - the CTAs narrowed (autouse)

from bulkred_dialect.compiler import compile_tile_module
from bulkred_dialect.interpreter.clusters import run_cluster_grid
from bulkred_dialect.passes.variants import rows_bulk, rows_common
from bulkred_dialect.row_kernels import module


def _rows(m: int, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((m, n)) * 3 + 1.5


def _spy(monkeypatch) -> list[bool]:
    """The answers of rows_common.log_softmax_lse while kernels are built."""
    seen: list[bool] = []
    real = rows_common.log_softmax_lse

    def spy(p):
        seen.append(real(p))
        return seen[-1]

    monkeypatch.setattr(rows_common, "log_softmax_lse", spy)
    return seen


def _subs(n: int, lse: bool, monkeypatch) -> int:
    """The ``sub.rn.f32`` of log_softmax bfloat16's kernel at N = ``n`` (any M, sm_90a, the
    dispatch's variant) with LOG_SOFTMAX_LSE ``lse``."""
    monkeypatch.setattr(rows_common, "LOG_SOFTMAX_LSE", lse)
    return compile_tile_module(module("log_softmax", None, n, "bfloat16"), "sm_90a", cache=False).ptx.count("sub.rn.f32")


@pytest.mark.parametrize("n", [1024, 4096])
def test_lse_one_subtraction_an_element(n: int, monkeypatch) -> None:
    """LOG_SOFTMAX_LSE's kernel has one ``sub.rn.f32`` fewer for each value a thread writes
    (rows_warp at 1024, 2 vectors of 8 a lane of the test's narrowed CTAs; rows_cta at 4096)
    and one more (lse) a row: at least 8 fewer in all."""
    assert _subs(n, True, monkeypatch) <= _subs(n, False, monkeypatch) - 8


def test_on_only_where_measured() -> None:
    """The switch is None and its table holds only what an H200 measured faster (the
    eighth session's probe: log_softmax bfloat16 65536, with rows_bulk.CHOSEN's row;
    float16 as bfloat16): every other cell keeps the default's y = (x - max) - log(sum)."""
    assert rows_common.LOG_SOFTMAX_LSE is None
    on = {(d, n) for n in (1024, 4096, 16384, 65536, 262144) for d in ("bfloat16", "float16", "float32")
          if rows_common.setting_of(None, rows_common.LOG_SOFTMAX_LSE_MEASURED, d, n, "log_softmax")}
    assert on == {("bfloat16", 65536), ("float16", 65536)}
    for d in ("bfloat16", "float16", "float32"):  # another kind never takes log_softmax's entry
        assert not rows_common.setting_of(None, rows_common.LOG_SOFTMAX_LSE_MEASURED, d, 65536, "softmax")


# (variant, N, dtype): rows_warp's butterfly (a partial round: 17 vectors over 32 lanes),
# rows_cta's shared-memory step (75 vectors over 64 threads), rows_stream's second read
LSE_CELLS = [("rows_warp", 68, "bfloat16"), ("rows_cta", 300, "bfloat16"), ("rows_stream", 300, "bfloat16"),
             ("rows_cta", 300, "float32")]


@pytest.mark.parametrize("variant,n,dtype", LSE_CELLS)
def test_lse_against_float64_and_batch_invariant(variant: str, n: int, dtype: str, monkeypatch) -> None:
    """LOG_SOFTMAX_LSE: y within check's bounds of float64, the setting taken (the builder
    asked, True), and row 1 alone gives its bits in the batch (M plays no part); off, the
    default's y within the same bounds."""
    x = _rows(4, n, seed=n)
    monkeypatch.setattr(rows_common, "LOG_SOFTMAX_LSE", False)
    off = run("log_softmax", x, dtype, variant=variant)
    seen = _spy(monkeypatch)
    monkeypatch.setattr(rows_common, "LOG_SOFTMAX_LSE", True)
    on = run("log_softmax", x, dtype, variant=variant)
    assert seen and all(seen)
    check("log_softmax", *on, dtype)
    check("log_softmax", *off, dtype)
    alone = run("log_softmax", x[1:2], dtype, variant=variant)
    assert alone[0].tobytes() == on[0][1:2].tobytes()


@pytest.mark.parametrize("variant", ["rows_cta", "rows_stream"])
def test_lse_non_finite_rows_as_the_default(variant: str, monkeypatch) -> None:
    """An all -inf row, a row with a NaN and a row with +inf give NaN rows as the default's
    (``-inf - -inf``); a -inf element gives -inf; and rows of logits near 1e10 (bfloat16
    steps of 2^26: lse's rounding to x's exponent) stay within check's bound of float64."""
    n = 136
    x = _rows(6, n, seed=5)
    x[1] = -np.inf
    x[2, n // 2] = np.nan
    x[3, n - 2] = np.inf
    x[0, 3] = -np.inf
    x[4:] = 1e10 + x[4:] * 1e8
    got = []
    for on in (False, True):
        monkeypatch.setattr(rows_common, "LOG_SOFTMAX_LSE", on)
        got.append(run("log_softmax", x, "bfloat16", variant=variant))
    off, lse = got
    assert np.isnan(lse[0][1:4]).all() and np.isnan(off[0][1:4]).all()
    assert lse[0][0, 3] == -np.inf and np.isfinite(np.delete(lse[0][0], 3)).all()
    y, stats, xv = lse[0], lse[1], lse[2]
    check("log_softmax", y[4:], {k: v[4:] for k, v in stats.items()}, xv[4:], None, None, "bfloat16")
    # (row 0 without its -inf element: exp(-inf) adds 0, the same statistics and reference)
    check("log_softmax", np.delete(y[0], 3)[None], {k: v[:1] for k, v in stats.items()}, np.delete(xv[0], 3)[None],
          None, None, "bfloat16")


def _bulk_small(monkeypatch, st: rows_bulk.Setting) -> None:
    """rows_bulk with setting ``st`` for log_softmax at every N, shrunk for the interpreter
    (slices of 512 bytes in chunks of 128, CTAs of one warp, no cap on the units, one
    cluster for all the rows; test_rows_forward_bulk.small_bulk's), on the interpreter's
    clusters."""
    monkeypatch.setattr(rows_bulk, "CHUNK", 128)
    monkeypatch.setattr(rows_bulk, "MIN_BLOCK", 32)
    small = replace(st, slice_bytes=512, block=32, max_units=None, min_ctas=None)
    monkeypatch.setattr(rows_bulk, "CHOSEN", [(d, ("log_softmax",), 1, 1 << 30, small) for d in ("bfloat16", "float32")])
    monkeypatch.setattr(test_rows, "interpret", lambda m, *args: run_cluster_grid(m, "rows", *args))


# --set logsoftmax's rows_bulk settings: softmax bfloat16 262144's (the slice in registers,
# persistent, fast exp, words), 65536's (a unit a row, the first copy early; fast exp, words),
# with online statistics, and cross_entropy bfloat16 16384's shape (persistent, registers)
BULK = {
    "softmax 262144's": rows_bulk.Setting(65536, 512, None, True, 2, registers=True, max_units=15, fast_exp=True,
                                          words=True),
    "softmax 65536's, online": rows_bulk.Setting(65536, 256, 2, False, 1, early_copy=True, online=True, fast_exp=True,
                                                 words=True),
    "today's 262144, fast exp, words": rows_bulk.Setting(65536, 512, None, True, 2, online=True, max_units=15,
                                                         fast_exp=True, words=True),
}


@pytest.mark.parametrize("name", list(BULK))
def test_bulk_settings_with_lse_against_float64(name: str, monkeypatch) -> None:
    """Each rows_bulk setting of the probe with LOG_SOFTMAX_LSE: 3 bfloat16 rows of 512 (2
    CTAs of one warp a row, two 8-byte vectors a thread) within check's bounds of float64;
    rows_bulk chosen with the setting, and row 2 alone gives its bits in the batch."""
    _bulk_small(monkeypatch, BULK[name])
    monkeypatch.setattr(rows_common, "LOG_SOFTMAX_LSE", True)
    op = next(o for o in module("log_softmax", 3, 512, "bfloat16").walk() if o.name == "bulkred.normalize_rows")
    assert rows_bulk.bulk_for(op)[0] == 2
    assert rows_bulk.setting_for(op) == replace(BULK[name], slice_bytes=512, block=32, max_units=None, min_ctas=None)
    x = _rows(3, 512, seed=13)
    y, stats, xv, w, b = run("log_softmax", x, "bfloat16", variant="rows_bulk")
    check("log_softmax", y, stats, xv, w, b, "bfloat16")
    alone = run("log_softmax", x[2:3], "bfloat16", variant="rows_bulk")
    assert alone[0].tobytes() == y[2:3].tobytes()


def test_the_flips_entries_take_effect(monkeypatch) -> None:
    """The entries the probe's verdicts name (a ``("log_softmax", BF16.name)`` key, N's range
    only): LOG_SOFTMAX_LSE_MEASURED's turns the setting on at that N for bfloat16 (and
    float16, which follows bfloat16) and nowhere else; rows_cta.MIN_CTAS_MEASURED's gives
    the kernel its ``.minnctapersm``."""
    from bulkred_dialect.passes.variants import rows_cta

    key = ("log_softmax", rows_common.BF16.name)
    monkeypatch.setattr(rows_common, "LOG_SOFTMAX_LSE_MEASURED", rows_common.half_as_bfloat16({key: ((4096, 4096),)}))
    table = rows_common.LOG_SOFTMAX_LSE_MEASURED
    assert rows_common.setting_of(None, table, "bfloat16", 4096, "log_softmax")
    assert rows_common.setting_of(None, table, "float16", 4096, "log_softmax")
    assert not rows_common.setting_of(None, table, "bfloat16", 2048, "log_softmax")
    assert not rows_common.setting_of(None, table, "float32", 4096, "log_softmax")
    assert not rows_common.setting_of(None, table, "bfloat16", 4096, "softmax")
    assert _subs(4096, None, monkeypatch) < _subs(4096, False, monkeypatch)
    monkeypatch.setattr(rows_cta, "MIN_CTAS_MEASURED", rows_common.half_as_bfloat16({key: ((4096, 4096, 7),)}))
    ptx = compile_tile_module(module("log_softmax", None, 4096, "bfloat16"), "sm_90a", cache=False).ptx
    assert ".minnctapersm 7" in ptx
