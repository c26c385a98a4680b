"""rows_bulk's ring of slice buffers (``rows_bulk.BUFFERS`` 3 or more, off: the persistent
grid's next ``B - 1`` rows copied while this one is computed; measured by
tools/probes/rows_sweep.py) on the interpreter's clusters against numpy in float64, and
its bits against two buffers' (the same row arithmetic); a setting's own copy size
(``rows_bulk.Setting.chunk``, off).

Small settings keep the interpreter fast (test_rows_forward_bulk.small_bulk: slices of
512 bytes, CTAs of one warp): one unit takes every row, so 7 rows go through a ring of 3
slots (slot 0 three times: both phases of its mbarrier), 2 rows through a ring of 4 (the
prologue's copies past M skipped)."""

from __future__ import annotations

import numpy as np
import pytest
import test_rows
from test_rows import check, run
from test_rows_forward_bulk import small_bulk

from bulkred_dialect.interpreter.clusters import run_cluster_grid
from bulkred_dialect.passes.variants import rows_bulk, rows_common


@pytest.fixture(autouse=True)
def small(monkeypatch):
    """One persistent unit (cluster or CTA) for all the rows, on the interpreter's clusters."""
    monkeypatch.setattr(rows_common, "sm_count", lambda target: 0)
    small_bulk(monkeypatch)
    monkeypatch.setattr(rows_bulk, "PERSISTENT", True)
    monkeypatch.setattr(test_rows, "interpret", lambda m, *args: run_cluster_grid(m, "rows", *args))


def _rows(m: int, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((m, n)) * 3 + 5


def _bits(y: np.ndarray) -> bytes:
    return np.ascontiguousarray(y).tobytes()


@pytest.mark.parametrize("kind,dtype,n,buffers,m", [
    ("softmax", "bfloat16", 512, 3, 7),  # clusters of 2, the ring wrapping twice
    ("layer_norm", "float32", 128, 4, 2),  # one CTA, fewer rows than the ring's prologue copies
    ("add_rms_norm", "float32", 128, 3, 4),  # x's and the residual's slices both in the ring
])
def test_ring_against_float64_and_two_buffers(monkeypatch, kind: str, dtype: str, n: int, buffers: int, m: int) -> None:
    """y and the statistics against float64, and y's bits those of two buffers."""
    x = _rows(m, n, seed=buffers + m)
    affine = dtype if kind in ("layer_norm", "add_rms_norm") else None
    monkeypatch.setattr(rows_bulk, "BUFFERS", buffers)
    y, stats, xv, w, b = run(kind, x, dtype, affine=affine, variant="rows_bulk")
    check(kind, y, stats, xv, w, b, dtype)
    monkeypatch.setattr(rows_bulk, "BUFFERS", 2)
    y2 = run(kind, x, dtype, affine=affine, variant="rows_bulk")[0]
    assert _bits(y) == _bits(y2)


def test_ring_takes_its_slots(monkeypatch) -> None:
    """The ring's kernel holds B slices and B mbarriers, and the two buffers' kernel two
    (the ring is what runs above, not the default's path)."""
    from bulkred_dialect.backend_ptx.runtime import lower_tile_module
    from bulkred_dialect.row_kernels import module

    def shared(buffers: int) -> str:
        monkeypatch.setattr(rows_bulk, "BUFFERS", buffers)
        built = module("softmax", 5, 512, "bfloat16", variant="rows_bulk")
        lower_tile_module(built, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
        return str(built)

    two, three = shared(2), shared(3)
    assert "memref<2xi64" in two and "memref<3xi64" in three  # (row_loaded: an mbarrier a slot)


def test_a_settings_chunk(monkeypatch) -> None:
    """``Setting.chunk``: each lane's copy of 64 bytes (8 lanes a slice of 512) instead of
    rows_bulk.CHUNK's 128 (4 lanes), in a ring of 3: y against float64 and the bits of
    the module's chunk."""
    from bulkred_dialect.backend_ptx.runtime import lower_tile_module
    from bulkred_dialect.row_kernels import module

    x = _rows(5, 512, seed=5)
    ys, texts = [], []
    for chunk in (64, None):
        st = rows_bulk.Setting(512, 32, None, True, 3, chunk=chunk)
        monkeypatch.setattr(rows_bulk, "CHOSEN", [("bfloat16", None, 1, 1 << 30, st)])
        y, stats, xv, w, b = run("rms_norm", x, "bfloat16", affine="bfloat16", variant="rows_bulk")
        check("rms_norm", y, stats, xv, w, b, "bfloat16")
        ys.append(_bits(y))
        built = module("rms_norm", 5, 512, "bfloat16", weight="bfloat16", eps=1e-5, variant="rows_bulk")
        lower_tile_module(built, "sm_90a", pipeline="lower-tile-reductions{target=sm_90a}")
        texts.append(str(built))
    assert ys[0] == ys[1]
    assert texts[0] != texts[1]  # (the chunk is what the kernel copies by)
