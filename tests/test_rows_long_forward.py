"""rows_bulk with ``Setting.registers`` (issue 30, section 4, the long rows): each thread
reads its share of the CTA's slice from shared memory once, into registers, and the
statistics and y come from the registers (rows_common.registers_row), on the
interpreter's clusters against numpy in float64; off by default (the default dispatch's
PTX does not change).

Small settings keep the interpreter fast (test_rows_forward_bulk's): slices of 512 bytes
in chunks of 128, CTAs of one warp, one cluster (or CTA) for every row."""

from __future__ import annotations

import numpy as np
import pytest
import test_rows
from test_rows import check, reference, run, run_cross_entropy

from bulkred_dialect.interpreter.clusters import run_cluster_grid
from bulkred_dialect.passes.lower_tile_reductions import explanations
from bulkred_dialect.passes.variants import rows_bulk, rows_common
from bulkred_dialect.row_kernels import module

SM90 = test_rows.SM90


@pytest.fixture(autouse=True)
def small(monkeypatch):
    """test_rows_forward_bulk's small settings, with the slice held in registers."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 0)
    monkeypatch.setattr(rows_bulk, "SLICE_BYTES", 512)
    monkeypatch.setattr(rows_bulk, "CHUNK", 128)
    monkeypatch.setattr(rows_bulk, "BLOCK", 32)
    monkeypatch.setattr(rows_bulk, "MIN_BLOCK", 32)
    monkeypatch.setattr(rows_bulk, "CHOSEN", [(d, None, 1, 1 << 30, None) for d in ("float32", "bfloat16")])
    monkeypatch.setattr(rows_bulk, "PERSISTENT", None)
    monkeypatch.setattr(rows_bulk, "BUFFERS", 2)
    monkeypatch.setattr(rows_bulk, "REGISTERS", True)
    monkeypatch.setattr(rows_common, "FAST_EXP", False)  # (its accuracy: tests/test_rows_norms_forward.py)
    monkeypatch.setattr(test_rows, "interpret", lambda m, *args: run_cluster_grid(m, "rows", *args))


def _rows(m: int, n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((m, n)) * 3 + 5


def _ptx(kind: str, n: int, dtype: str) -> str:
    """The kernel's PTX for sm_90a (assembled: nvJitLink, no GPU)."""
    from bulkred_dialect.compiler import compile_tile_module

    kw = {"weight": dtype, "bias": dtype, "eps": 1e-5} if kind == "layer_norm" else {}
    return compile_tile_module(module(kind, None, n, dtype, variant="rows_bulk", **kw), "sm_90a", cache=False).ptx


# float32 512: 4 CTAs of one warp, one vector a thread; bfloat16 1024: 4 CTAs, two
# 8-byte vectors a thread; float32 128: one CTA (no cluster exchange)
@pytest.mark.parametrize("kind", ["softmax", "log_softmax", "rms_norm", "layer_norm"])
@pytest.mark.parametrize("dtype,n", [("float32", 512), ("bfloat16", 1024), ("float32", 128)])
def test_kinds(kind: str, dtype: str, n: int) -> None:
    """y and the statistics of 5 rows (both slot sets, both mbarrier phases) against
    float64, the slice in registers."""
    y, stats, xv, w, b = run(kind, _rows(5, n), dtype, affine=dtype if kind in ("rms_norm", "layer_norm") else None,
                             variant="rows_bulk")
    check(kind, y, stats, xv, w, b, dtype)


@pytest.mark.parametrize("kind,dtype", [("layer_norm", "float32"), ("rms_norm", "bfloat16")])
def test_early_affine(monkeypatch, kind: str, dtype: str) -> None:
    """The weight's and bias's values loaded before the exchange (EARLY_AFFINE): the same
    y (clusters of 4, 5 rows)."""
    monkeypatch.setattr(rows_bulk, "EARLY_AFFINE", True)
    n = 512 if dtype == "float32" else 1024
    y, stats, xv, w, b = run(kind, _rows(5, n, seed=13), dtype, affine=dtype, variant="rows_bulk")
    check(kind, y, stats, xv, w, b, dtype)


@pytest.mark.parametrize("registers", [True, False])
def test_early_copy(monkeypatch, registers: bool) -> None:
    """The first row's copy issued before the cluster barrier (EARLY_COPY; clusters of 4,
    one buffer): the unit's first row from it, the next 4 copied in the loop (the
    mbarrier's phases alternate as without it)."""
    monkeypatch.setattr(rows_bulk, "EARLY_COPY", True)
    monkeypatch.setattr(rows_bulk, "REGISTERS", registers)
    y, stats, xv, w, b = run("rms_norm", _rows(5, 512, seed=19), "float32", affine="float32", variant="rows_bulk")
    check("rms_norm", y, stats, xv, w, b, "float32")
    assert _ptx("softmax", 512, "float32").count("cp.async.bulk.shared") == 2  # (before the loop, in it)


def test_layer_norm_large_mean() -> None:
    """layer_norm's one exchange (rows_bulk.Moments: the threads' rounded means' error
    carried along): rows of mean 1000 and spread 1 (sums of x^2 would cancel; Chan's
    formula on the rounded means alone is 1.8e-6 off in rstd here) give the mean and
    rstd within 2e-7 (float64 reference; the passes' two exchanges: 5e-8)."""
    x = np.random.default_rng(17).standard_normal((3, 512)) + 1000.0
    _, stats, xv, w, b = run("layer_norm", x, "float32", affine="float32", variant="rows_bulk")
    _, ref = reference("layer_norm", xv, w, b, 1e-5)
    for name in ("mean", "rstd"):
        np.testing.assert_allclose(stats[name], ref[name], rtol=2e-7, atol=0)


def test_cross_entropy() -> None:
    """cross_entropy with the slice in registers (rows_common.registers_row from shared
    memory; clusters of 4): a target inside, the last, ignore_index and one outside."""
    run_cross_entropy(512, 0.1, variant="rows_bulk")


def test_persistent_two_buffers(monkeypatch) -> None:
    """A persistent grid of clusters of 2, two slice buffers (the next row copied while
    this one is in registers): the slice read from the buffer of the row's parity."""
    monkeypatch.setattr(rows_bulk, "PERSISTENT", True)
    y, stats, xv, w, b = run("layer_norm", _rows(5, 256, seed=11), "float32", affine="float32", variant="rows_bulk")
    check("layer_norm", y, stats, xv, w, b, "float32")


def test_batch_invariance() -> None:
    """The same row gives the same bits alone, as the 2nd of 3 rows and as the 4th of 7."""
    x = _rows(7, 512, seed=3)
    ys = [run("softmax", x[3:4], "bfloat16", variant="rows_bulk")[0][0],
          run("softmax", x[2:5], "bfloat16", variant="rows_bulk")[0][1],
          run("softmax", x, "bfloat16", variant="rows_bulk")[0][3]]
    assert all(np.array_equal(ys[0], y) for y in ys[1:])


def test_registers_read_shared_memory_once(monkeypatch) -> None:
    """The slice in registers reads each shared vector once (float32 512 x 4 CTAs of a warp:
    one ld.shared.v4 a thread) and layer_norm's statistics cross the cluster in one
    exchange (one st.async); the passes read it once per statistic and for y (layer_norm:
    3), two exchanges; the PTX differs only with the setting on."""
    on = _ptx("layer_norm", 512, "float32")
    monkeypatch.setattr(rows_bulk, "REGISTERS", False)
    off = _ptx("layer_norm", 512, "float32")
    assert on.count("ld.shared::cta.v4.f32") == 1 and off.count("ld.shared::cta.v4.f32") == 3
    assert on.count("st.async") == 1 and off.count("st.async") == 2


def test_too_many_values_refused(monkeypatch) -> None:
    """A share of more than MAX_REGISTER_VALUES values a thread is left to the other
    variants, with the reason (float32 rows of 512 in one CTA of a warp: 16 values)."""
    monkeypatch.setattr(rows_bulk, "MAX_REGISTER_VALUES", 8)
    monkeypatch.setattr(rows_bulk, "SLICE_BYTES", 4096)
    (table,) = explanations(module("softmax", 2, 512, "float32"), SM90)
    line = next(s for s in table.splitlines() if s.split()[:1] == ["rows_bulk"] and "slices" in s)
    assert "FAIL" in line and "16 values a thread in registers (at most 8)" in line, table
